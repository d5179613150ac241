"""Spiders of the sample project (just ``demo``)."""
