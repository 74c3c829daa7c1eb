# ruff: noqa: E501  (one sample per line reads best in a data table)
"""A second secrets corpus, written after the detector's issue-21 changes and never used to
tune it: bench/bench_secrets.py reports both detectors on it next to the tests' corpus. All
values are made up; they are assembled from pieces so this file itself does not look like it
holds live credentials."""

from __future__ import annotations

HOLDOUT_POSITIVES: list[tuple[str, str]] = [
    ("AWS key in an INI file", "[default]\naws_access_key_id = AKIA" + "ZX4MB7PL2QW9RT6Y\n"),
    ("AWS secret in an INI file", "aws_secret_access_key = " + "Hq8v2Lk9Zp3Xw7Rt4Yn6Bm1Cs5Dg0Fj/KeYvAl\n"),
    ("GitHub app token", "ghs_" + "Lm3Qw8Ex2Rt6Yu9Io1Pa4Sd7Fg0Hj5Kl2Zx"),
    ("GitLab runner token", "glrt-" + "Aq9Ws8Ed7Rf6Tg5Yh4Uj"),
    ("Slack user token", "xoxp-" + "3141592653-5897932384-qwertyuiopasdfghjkl"),
    ("Stripe live restricted key", "rk_live_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"),
    ("Google OAuth access token", "ya29." + "a0AfH6SMBx7Qw2Er4Ty6Ui8Op0As2Df4Gh"),
    ("Twilio key in prose", "twilio sid SK" + "fedcba9876543210fedcba9876543210"),
    ("SendGrid in YAML", "sendgrid_api_key: SG." + "Pq1Wr2Et3Yu4Io5Pa6Sd" + "." + "Fg7Hj8Kl9Zx0Cv1Bn2Mq3We4Rt5Yu6Io7Pa8Sd9Fg0H"),
    ("URL with a password, ftp", "ftp://backup:Vx7qP2mZ9w@files.example.org/dump.sql"),
    ("MongoDB SRV string", "mongodb+srv://svc:Qz8Lk2Vb6Np@cluster0.abcde.mongodb.net/app"),
    ("AMQP URL", "amqp://guest:Rb7Tn2Wq9Lp@rabbit.internal:5672/"),
    ("JDBC password parameter", "jdbc:postgresql://db/app?user=app&password=Jt5Kr8Qm2Xw"),
    ("netrc default entry", "default login anonymous password Mx4Pq9Lz2Vb7"),
    ("YAML secret", "client_secret: Hn3Jk8Lp2Qw7Er5Ty"),
    ("TOML token", 'token = "Wd4Fg7Hj2Kl9Zx3Cv6Bn"'),
    ("env file password", "POSTGRES_PASSWORD=Tq6Wp1Zr8Xm3"),
    ("PowerShell credential", "$password = ConvertTo-SecureString 'Qa9Zs8Xd7Cf' -AsPlainText"),
    ("Docker login password flag", "docker login -u ci --password Pz5Lx8Qv2Nm registry.example.com"),
    ("private key PKCS8", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----"),
    ("EC private key", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oGp6Lh+lbNfZoAoGCCqGSM49\n-----END EC PRIVATE KEY-----"),
    ("Heroku-style UUID after api key", "heroku api key 5a6b7c8d-1e2f-3a4b-5c6d-7e8f9a0b1c2d"),
    ("hex key after secret", "webhook secret 7d1e0c2b9a8f7e6d5c4b3a2f1e0d9c8b"),
    ("Vault token", "VAULT_TOKEN=hvs." + "CAESIJq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh"),
    ("Grafana service account token", "glsa_" + "Qw8Er2Ty6Ui0Op4As8Df2Gh6Jk0Lz4Xc_9a8b7c6d"),
    ("Doppler token", "dp.pt." + "Zq8Xw2Ev4Rb6Tn1Ym3Uk5Il7Op9Aj0Sh1Dd"),
    ("password split over two lines", "db password: Xk9vQ2\nmLp7Rw"),
    ("full-width AWS key", "".join(chr(ord(c) + 0xfee0) for c in "AKIAZX4MB7PL2QW9RT6Y")),
]

HOLDOUT_NEGATIVES: list[tuple[str, str]] = [
    ("git log line", "a1b2c3d Merge pull request #482 from org/fix-login-timeout"),
    ("package lock integrity", '"integrity": "sha512-'
     'Q2fJ0nTbA1x7mH2vZ9sK4pLw3eR8tY6uI5oP1aS0dF7gH3jK2lZ9xC4vB6nM8qW1eR5tY7uI3oP9aS2dF4gH6jK=="'),
    ("go.sum line", "golang.org/x/text v0.14.0 h1:ScX5w1eTa3QqT8oi6+ziP7dTV1S2+ALU0bI+0zXKWiQ="),
    ("CSS", ".btn-primary { color: #1a2b3c; background: linear-gradient(#fff, #eee); }"),
    ("login form prose", "the login form asks for a password and a one-time code"),
    ("netrc doc", "netrc lines look like: machine HOST login USER password PASS"),
    ("config without value", "password: ${{ secrets.DB_PASSWORD }}"),
    ("k8s secret ref", "valueFrom: secretKeyRef: name: db-creds key: password"),
    ("python kwargs", "connect(host=host, user=user, password=password)"),
    ("function name", "def reset_password_with_token(user_id, token_ttl=3600):"),
    ("long snake identifier", "test_password_reset_token_expires_after_one_hour"),
    ("URL with port", "http://localhost:8000/api/v1/users?page=2&limit=50"),
    ("ssh git URL", "git@github.com:org/repo.git"),
    ("docker image", "ghcr.io/org/service:1.4.2-alpine3.19"),
    ("semver range", "requires typer>=0.9,<1.0 and rich~=13.7"),
    ("two-line prose", "the migration adds a column\nand backfills it in batches"),
    ("base64 of a short word", "echo aGVsbG8gd29ybGQ= | base64 -d"),
    ("UUIDs in a log", "trace 4f1c2b3a-9d8e-4f7a-b6c5-d4e3f2a1b0c9 span 0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e"),
    ("Chinese prose about keys", "密钥存放在保管库中，不要写进仓库"),
    ("French prose", "le mot de passe est stocké dans le coffre, pas ici"),
    ("German config prose", "Das Passwort wird aus der Umgebung gelesen"),
    ("markdown table", "| name | type |\n|------|------|\n| token_budget | int |"),
    ("coverage line", "agentstate/secret_scan.py      412     12    97%   88-91"),
    ("hash in a commit message", "Revert 'fix' (reverts commit 9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b)"),
    ("wrapped path over lines", "see /home/user/projects/agentstate/\nagentstate/secret_scan.py"),
]
