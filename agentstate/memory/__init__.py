"""Long-term memory behind a write gate and a read gate.

Modules: `memory_tables` (tables, FTS indexes), `event_index_tables` (the event index's
migrations), `vector_tables` (the dense vectors' tables),
`search` (FTS5 search shared with events), `model` (records, validation, principals, reading
back), `write` (the write gate: `remember`), `versions` (authority rule, `correct`,
`confirm`), `recall` (the read gate), `forget` (tombstones and purges), `distill` (run →
memory candidates).
"""
