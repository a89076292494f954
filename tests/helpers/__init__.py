"""Builders of small offline releases and encoders shared by the tests (imported as ``tests.helpers.*``)."""
