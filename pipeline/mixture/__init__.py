"""Sources and mixture weights: which source a document belongs to, and how often it is seen."""
