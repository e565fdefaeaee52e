// Placeholder: filled by the helper that owns it (issue 6).
