"""What a run tells its user: the JSON envelope every command shares, the per-scenario text,
JSON and JUnit of the gate (``scenarios``), HTML and Markdown pages, shard merging, and the one
progress line of long commands. Reports read results; they never run anything."""
