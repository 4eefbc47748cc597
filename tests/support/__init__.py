"""Test support: local servers, fixture sites and reference implementations the tests import."""
