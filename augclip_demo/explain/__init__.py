"""Explanations: figures and arrays that show why a metric scored an edit as it did."""
