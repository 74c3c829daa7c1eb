# ruff: noqa: E501  (one sample per line reads best in a data table)
"""The secrets corpus: shapes the detector must catch, and near misses it must leave alone.

Each positive is (shape, text, needle): `needle` is the secret part, what must never reach
state.db, its WAL or a git object. Values are assembled from pieces so this file does not
itself look like it holds live credentials to other scanners. None of them is real.
"""

from __future__ import annotations

_B64 = "NqVwYS81VP7Hb/1DX8pPd/5khxE3pyIgKpaUnArl"  # 40 chars, two `/`: an AWS secret's shape
_HEX64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
_JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + "."
        + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ" + "."
        + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
_KEY_BODY = [
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn",
    "NhAAAAAwEAAQAAAYEAu7Hk1Qh+Zr3m9XyWQ2pV8sLx0cN4dT6fGj5aKb1eYo7MnR2wPqS3",
    "vUz9HcJd0kLm4Ty8Bf2Xq6Wn1Ea5Rs7Gp3Dh9Vj0Mc2Lk8Fb4Nz6Qw1Yt5Ux3Ir7Oe9Sa2",
    "Zk1Po3Bm5Cv7Dn9Ex1Fy3Gz5Ha7Ib9Jc1Kd3Le5Mf7Ng9Oh1Pi3Qj5Rk7Sl9Tm1Un3Vo5W",
]
PRIVATE_KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(_KEY_BODY)
               + "\n-----END OPENSSH PRIVATE KEY-----")

POSITIVES: list[tuple[str, str, str]] = [
    ("AWS access key id", "aws key AKIA" + "QYLPMN5HZ3XWTR2K", "AKIA" + "QYLPMN5HZ3XWTR2K"),
    ("AWS secret key with /", "aws secret " + _B64, _B64),
    ("AWS secret assignment", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzKEYLONG",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzKEYLONG"),
    ("GitHub classic token", "push with ghp_" + "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u",
     "ghp_" + "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u"),
    ("GitHub token split by U+200B",
     "token ghp_\u200b" + "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u", "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8"),
    ("GitHub fine-grained PAT", "github_pat_" + "11ABCDEFG0" + "x" * 3 + "Q7rT2vY8uI1oP4aS6dF9gH3jK5lZ"
     + "xC0vB2nM4qW6eR8tY1uI3oP5aS7dF9gH2jK4", "github_pat_11ABCDEFG0"),
    ("GitLab token", "glpat-" + "Zx8Kq2Lm9Vb4Nw7Rt1Yp", "glpat-" + "Zx8Kq2Lm9Vb4Nw7Rt1Yp"),
    ("OpenAI key", "OPENAI sk-" + "proj-Q2w8E4r6T1y3U5i7O9p0A2s4D6f8G1h3", "Q2w8E4r6T1y3U5i7O9p0"),
    ("Anthropic key", "sk-" + "ant-api03-Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh", "Zq8Xw2Ev4Rb6Tn1Ym3Uk"),
    ("Slack bot token", "xoxb-" + "2048-1024-Qm7Xk2Lp9Vr4", "xoxb-" + "2048-1024-Qm7Xk2Lp9Vr4"),
    ("Slack webhook", "hook https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/"
     "abcdefghijklmnopqrstuvwx", "B0BBBBBBB/abcdefghijklmnopqrstuvwx"),
    ("Discord webhook", "https://discord.com/api/webhooks/123456789012/"
     "Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0ShQq", "Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0ShQq"),
    ("Google API key", "AIza" + "SyB7q9Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh", "SyB7q9Xw2Ev4Rb6Tn1Ym3Uk5"),
    ("Stripe secret key", "stripe sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("Stripe restricted key", "rk_test_" + "51Hx8Qw2Ev4Rb6Tn1Ym3Uk", "51Hx8Qw2Ev4Rb6Tn1Ym3Uk"),
    ("npm token", "//registry.npmjs.org/:_authToken=npm_" + "Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh1Dd",
     "Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh1Dd"),
    ("PyPI token", "pypi-AgE" + "Ibd5Qw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh1DdFf8Gg2Hh",
     "Ibd5Qw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh1Dd"),
    ("Hugging Face token", "hf_" + "Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh", "Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il"),
    ("SendGrid key", "SG." + "Zq8Xw2Ev4Rb6Tn1Ym3Uk5I" + "." + "Il7Op9Aj0Sh1DdFf8Gg2Hh4Jj6Kk8Ll0Mm2Nn4Pp6Q",
     "Il7Op9Aj0Sh1DdFf8Gg2Hh4Jj6Kk8Ll0Mm2"),
    ("JSON web token", "Authorization header was " + _JWT, _JWT.split(".")[2]),
    ("bearer token", "Authorization: Bearer Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op", "Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op"),
    ("basic auth header", "Authorization: Basic ZGVwbG95Omh1bnRlcjI=", "ZGVwbG95Omh1bnRlcjI"),
    ("private key block", "key:\n" + PRIVATE_KEY, _KEY_BODY[1]),
    ("private key body lines alone", "\n".join(_KEY_BODY[1:]), _KEY_BODY[2]),
    ("credential in URL", "clone https://deploy:hunter22x@git.example.com/r.git", "hunter22x"),
    ("redis URL with only a password", "cache at redis://:s3cretpassw0rd@cache:6379/0",
     "s3cretpassw0rd"),
    ("postgres URL", "DATABASE_URL=postgres://app:Xk9vQ2mL@db.internal:5432/app", "Xk9vQ2mL"),
    ("JSON password", '{"password": "hunter2hunter2"}', "hunter2hunter2"),
    ("SECRET_KEY env", "SECRET_KEY=django-insecure-abcdefghijklmnop", "django-insecure-abcdefghij"),
    ("YAML DB_PASS", "DB_PASS: correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("camelCase password", "const dbPassword = 'Pl4tyPus!9';", "Pl4tyPus!9"),
    ("API_KEY export", "export MY_API_KEY=3c5d7e9f1a2b4c6d", "3c5d7e9f1a2b4c6d"),
    ("Azure AccountKey", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
     "Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh1DdFf8Gg2Hh4Jj6Kk8Ll0Mm2Nn4Pp6Qq8==", "Zq8Xw2Ev4Rb6Tn1Ym3Uk5"),
    ("mysql -p", "mysql -u root -pS3cr3tPW mydb", "S3cr3tPW"),
    ("--password= flag", "psql --password=Zq8Xw2Ev4R postgres", "Zq8Xw2Ev4R"),
    ("--token flag", "gh auth login --token Yb7Kp3Wq9Lm2", "Yb7Kp3Wq9Lm2"),
    ("sshpass", "sshpass -p 'Wq9Lm2Yb7' ssh host", "Wq9Lm2Yb7"),
    ("prose password", "the prod DB password is Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("prose token", "my api key is 7Gh2Kq9Xw4Lm", "7Gh2Kq9Xw4Lm"),
    ("base64 blob with two /", "blob kq/Zx8+Lm9/Vb4Nw7Rt1Yp2Hs5Jd6Fg3Ac0Ue", "Lm9/Vb4Nw7Rt1Yp2Hs5J"),
    ("64-hex after a sensitive word", "api token " + _HEX64, _HEX64),
    ("64-hex signing key", "signing key " + _HEX64[::-1], _HEX64[::-1]),
    ("40-hex after password", "password: 4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a",
     "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a"),
    ("generated token", "use k8Zq2Lm9Xv4Bn7Rt1Yw6Ps3Df5Gh0Jk2 for the staging box",
     "k8Zq2Lm9Xv4Bn7Rt1Yw6Ps3Df5Gh0Jk2"),
    ("Twilio API key", "SK" + "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789"),
    ("DigitalOcean token", "dop_v1_" + "ab" * 32, "ab" * 32),
    ("Artifactory token", "AKC" + "p8Zq2Lm9Xv4Bn7Rt1Yw6Ps3Df5Gh0Jk2" * 2, "p8Zq2Lm9Xv4Bn7Rt1Yw6Ps3Df5Gh0Jk2"),
    ("Discord bot token", "MTk4NjIyNDgzNDcxOTI1MjQ4" + ".Cl2FMQ." + "ZnCjm1XVW7vRze4b7Cq4se7kKWs",
     "ZnCjm1XVW7vRze4b7Cq4se7kKWs"),
    ("Telegram bot token", "bot 123456789:AA" + "Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh1D",
     "Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh1D"),
    ("zero-width inside a password assignment", "pass\u200bword=Hu\u200cnter2!x", "nter2!x"),
    # Issue 21: the nine shapes that were stored, and one more of each class they stand for.
    (".netrc one line", "machine h login ci password Zp4rVx8qLm2w", "Zp4rVx8qLm2w"),
    (".netrc over lines", "machine ci.example.com\n  login deploy\n  password Qw7Rt2Yu9Io4", "Qw7Rt2Yu9Io4"),
    ("age secret key", "AGE-SECRET-KEY-1" + "QYLPMN5HZ3XWTR2KQYLPMN5HZ3XWTR2KQYLPMN5HZ3XWTR2KQYLPMN5HZ3", "QYLPMN5HZ3XWTR2KQYLPMN5HZ3XWTR2K"),
    ("Postman key", "PMAK-" + "64b2f1e0c3a5d7e9f1a2b4c6" + "-" + "0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b", "0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b"),
    ("Sentry DSN", "SENTRY https://" + "3f2a9c1e0b7d4a6f8e2c1b0a9d8e7f6a" + "@o450123.ingest.sentry.io/5521", "3f2a9c1e0b7d4a6f8e2c1b0a9d8e7f6a"),
    ("Pulumi hex token", "pul-" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"),
    ("RubyGems hex key", "rubygems_" + "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e", "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e"),
    ("Supabase hex key", "sbp_" + "a3bf4f1b2b0b822cd15d6c15b0f00a089f86d081", "a3bf4f1b2b0b822cd15d6c15b0f00a089f86d081"),
    ("New Relic key", "NRAK-" + "QYLPMN5HZ3XWTR2KQYLPMN5HZ3X", "QYLPMN5HZ3XWTR2KQYLPMN5HZ3X"),
    ("full-width GitHub token", "\uff47\uff48\uff50\uff3f" + "".join(chr(ord(c) + 0xfee0) for c in "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u"),
     "".join(chr(ord(c) + 0xfee0) for c in "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u")),
    ("Cyrillic look-alike in a prefix", "gh\u0440_" + "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u", "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u"),
    ("token split across lines", "token ghp_R8fK2mQ9xL4vN7bT1c\nW6yH3jP0sD5gZ8aE2u", "ghp_R8fK2mQ9xL4vN7bT1c"),
    ("AWS key split with a continuation", "aws AKIAQYLPMN\\\n    5HZ3XWTR2K", "AKIAQYLPMN"),
    ("ODBC connection string", "Server=db;Database=app;User Id=sa;Password=Xk9vQ2mLp7;", "Xk9vQ2mLp7"),
]

NEGATIVES: list[tuple[str, str]] = [
    ("git commit id", "fixed in commit 3f2a9c1e0b7d4a6f8e2c1b0a9d8e7f6a5b4c3d2e"),
    ("short sha", "reverted 3f2a9c1 and a1b2c3d4e5"),
    ("sha256 digest", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("content hash field", "text_hash 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
    ("tree hash", "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904 of skill deploy"),
    ("UUID", "request 123e4567-e89b-12d3-a456-426614174000 failed"),
    ("agentstate refs", "see evt:k3m9x2a7qd, mem:0pz8r4t6vw@v2 and pack:q2w3e4r5t6"),
    ("a ULID", "job 01J9Z3K4M5N6P7Q8R9S0T1V2W3 queued"),
    ("skill ref and tag", "loaded skill:verify-tests@v3 (tag skills/verify-tests/v3)"),
    ("a path", "see src/agentstate/memory/search_events_helper_module.py"),
    ("a deep path", "/usr/lib/python3.11/site-packages/Typer2/CoreCommands/Main.py"),
    ("a test name", "use test_upload_large_file_returns_413_status in CI"),
    ("CamelCase identifier", "ContextBudgeterPlacementStrategyV2 is used"),
    ("password field prose", "the password field must be validated on the server"),
    ("csrf token prose", "the csrf token is generated per request"),
    ("sort key prose", "sort_key = name, then the primary key"),
    ("token vault pointer", "token: see the team vault"),
    ("tokens budget", "context tokens: 8000 of 8000 used; encoding cl100k_base"),
    ("password placeholder", "PASSWORD=${DB_PASSWORD} and API_KEY=<your key>"),
    ("password file path", "DB_PASSWORD_FILE=/run/secrets/db_password"),
    ("keys prose", "the primary key and the foreign keys are indexed"),
    ("token count", "the token count was 1234 and the secret is to cache"),
    ("password prose stored", "the password is stored in the vault, not here"),
    ("mkdir -p", "mkdir -p build/output && git -p log"),
    ("mysql without password", "mysql -u root -p mydb"),
    ("URL without password", "https://user@example.com/path and https://example.com:8443/x"),
    ("version string", "python 3.11.9, numpy 1.26.4, agentstate 0.9.0"),
    ("Chinese prose", "数据库迁移必须向后兼容"),
    ("base64 of a word", "the encoded name is aGVsbG8="),
    ("pytest output", "tests/test_x.py::test_api_key_rotation PASSED [ 42%]"),
    ("docker digest", "image@sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1"),
    ("make target", "run make lint test-integration-all before committing"),
    ("hex color and port", "color #ff00aa on port 8080, id 42"),
    ("auth prose", "auth: required for every endpoint"),
    ("token_budget setting", "token_budget = 8000"),
    (".netrc without a password", "machine github.com login octocat"),
    ("netrc prose", "put the login in ~/.netrc, the password comes from the keychain"),
    ("split prose", "the deploy script\nruns the migration_step_one_helper\nthen restarts"),
    ("two hashes on two lines", "commit 3f2a9c1e0b7d4a6f8e2c1b0a9d8e7f6a5b4c3d2e\ncommit 4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
    ("full-width prose", "\uff21\uff42\uff43 \uff11\uff12\uff13 \u30c6\u30b9\u30c8\u3092\u5b9f\u884c"),
    ("Russian prose", "\u043f\u0430\u0440\u043e\u043b\u044c \u0445\u0440\u0430\u043d\u0438\u0442\u0441\u044f \u0432 \u0441\u0435\u0439\u0444\u0435"),
    ("URL with a user name", "ssh://git@github.com/org/repo.git and https://alice@example.com"),
    ("cache key digest", "cache key 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
]
