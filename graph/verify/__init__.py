"""Verification: guards, swapped roles, the judge, citation checks."""
