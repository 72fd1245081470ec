"""Topic bundles: topic and background LMs, keywords, classifier, calibration."""
