"""Which hits found by meaning alone sit where the question's words were found.

A hit sharing no word with the question past its speaker label (compression.anchorless: a
"blind" hit, found by the dense signal) is rarely evidence on its own: in a large room a
pack holds a hundred or more of them. Those a few turns from one of the strongest hits
that do share the question's words are the exception — a conversation stays on its topic
for a while, and the turn that answers is often a little before or after the one that
names what the question asks about, in other words. The same holds of the weaker hits that
do share a word with the question (event_items._complete_or_local): past the strongest,
a matched hit a few turns from one of them is evidence far more often than one elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentstate.context.compression import anchorless

# The first this many hits sharing a word with the question (in rank order) are the
# anchors, and a blind hit at most LOCAL_REACH turns from one of them, in its run, is
# local. On the dev split at 8,000 tokens the blind hits a pack placed were evidence at
# ~0.7 per 1,000 a pack in all, ~7 per 1,000 within five turns of the first three
# matched hits (4.8 such hits a pack, 36 evidence turns, 15 of them with an answer their
# shorter line did not show); the same day as those hits, ~4.8 per 1,000 of 11.8 a pack;
# within ten turns, 10.8 a pack for 42 (docs/evaluation.md, fifteenth round).
LOCAL_ANCHORS = 3
LOCAL_REACH = 5


def beside_anchors(hits: Sequence[Any], seqs: Mapping[str, int],
                   stems: tuple[str, ...]) -> frozenset[str]:
    """The refs of `hits` at most LOCAL_REACH turns (by `seqs`, event ref → its place in
    its run) from one of the first LOCAL_ANCHORS hits sharing a word with the question
    (`stems`), in the same run. A hit whose place is not known is never local; with no
    stems nothing anchors, and nothing is local."""
    anchors = [(hit.run, seqs[hit.ref]) for hit in hits
               if hit.ref in seqs and not anchorless(hit.text, stems)][:LOCAL_ANCHORS]
    if not stems or not anchors:
        return frozenset()
    return frozenset(hit.ref for hit in hits if hit.ref in seqs and any(
        hit.run == run and abs(seqs[hit.ref] - seq) <= LOCAL_REACH for run, seq in anchors))
