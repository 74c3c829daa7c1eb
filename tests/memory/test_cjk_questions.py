"""Natural questions in Chinese and Japanese run their words together; they must still find
the memories and events that hold those words apart. Through the CLI: `recall` and
`context --query`."""

from __future__ import annotations

from tests.memory.test_memory_gate import rem


def refs(data) -> list[str]:
    return [h["ref"] for h in data["hits"]]


def _chinese(cli):
    failed = rem(cli, "周五的数据库迁移在预发布环境失败了，原因是旧列被删除", "--kind", "fact")
    owner = rem(cli, "张伟负责这次数据库迁移，有问题先找他", "--kind", "fact")
    rem(cli, "部署前需要运行集成测试", "--kind", "procedure")
    rem(cli, "发布说明每周一更新", "--kind", "fact")
    return failed["ref"], owner["ref"]


def test_chinese_questions_find_words_held_apart(cli, initialised):
    failed, owner = _chinese(cli)
    # 迁移失败 "migration failed": the memory says 迁移 … 失败, never 迁移失败.
    hits = refs(cli.json("recall", "迁移失败"))
    assert hits[0] == failed and owner in hits
    # 谁负责迁移 "who is in charge of the migration": 负责 and 迁移 apart.
    assert refs(cli.json("recall", "谁负责迁移"))[0] == owner
    assert refs(cli.json("recall", "数据库迁移为什么失败了"))[0] == failed
    assert cli.json("recall", "天气预报怎么样")["matched_nothing"]


def test_japanese_questions(cli, initialised):
    failed = rem(cli, "昨日の結合試験で移行スクリプトが失敗した", "--kind", "fact")
    owner = rem(cli, "移行作業は佐藤さんが担当しています", "--kind", "fact")
    rem(cli, "リリースノートは月曜日に更新する", "--kind", "procedure")
    # "Why did the test fail?": 試験 … 失敗 apart in the memory.
    assert refs(cli.json("recall", "試験失敗の原因は"))[0] == failed["ref"]
    # "Who is in charge of the migration?": 移行 … 担当 apart.
    assert refs(cli.json("recall", "誰が移行担当ですか"))[0] == owner["ref"]


def test_mixed_latin_and_cjk(cli, initialised):
    target = rem(cli, "the nightly 迁移 job 在周五失败了, see the CI log", "--kind", "fact")
    other = rem(cli, "make test 在本地通过", "--kind", "fact")
    rem(cli, "数据库备份每天凌晨运行", "--kind", "fact")
    # The Latin word matches nothing; the CJK run holds 迁移 and 失败 together.
    assert refs(cli.json("recall", "为什么 staging 上迁移失败"))[0] == target["ref"]
    # Latin words and CJK pieces together: the text holding both ranks first.
    assert refs(cli.json("recall", "nightly job 迁移失败"))[0] == target["ref"]
    assert refs(cli.json("recall", "make test 通过了吗"))[0] == other["ref"]


def test_context_query_in_chinese_brings_memories_and_events(cli, initialised):
    failed, owner = _chinese(cli)
    cli.ok("run", "start", "修复预发布环境的问题")
    cli.ok("log", "observation", "迁移脚本在第三步失败，报错：列不存在",
           "--source", "tool:migrate")
    pack = cli.ok("context", "--query", "迁移失败的原因", "--budget", "3000").stdout
    evidence = pack[pack.index("## Evidence"):] if "## Evidence" in pack else pack
    assert "旧列被删除" in evidence
    assert "迁移脚本在第三步失败" in evidence
    owners = cli.ok("context", "--query", "谁负责迁移", "--budget", "3000").stdout
    assert "张伟负责这次数据库迁移" in owners
