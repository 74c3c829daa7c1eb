"""Tables owned by this domain. Append new migrations; never rename shipped ones."""

from __future__ import annotations

MIGRATIONS: list = []
