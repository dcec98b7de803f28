"""What users run against the service: the browser demo (web/), the replay tool, the ws client."""
