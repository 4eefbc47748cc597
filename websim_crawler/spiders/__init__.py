"""Spiders of the websim-crawler project."""
