"""Topic bundles: topic and background LMs, keywords, classifier, calibration (issue #12)."""
