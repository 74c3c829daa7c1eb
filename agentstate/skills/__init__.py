"""Skills: procedures kept in their own git registry, versioned, tested and loaded by ref.

A skill's life: new / propose → validate → test → publish → (load) → revoke. The modules:
records (the `skill_versions` rows and lookups), authoring (new, add, validate), propose
(a draft from a run), acceptance (test), publishing (approval and release), load,
revocation, history (history, diff, registry check); below them skill_file (the folder format
and its rules; folder_layout names its files, file_checks checks every file) and registry
(the git repository); beside them catalog, export and shipped.
"""
