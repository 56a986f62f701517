"""The quality classifier: one tokenisation, two backends (naive Bayes, fastText)."""
