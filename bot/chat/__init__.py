"""The platform-neutral chat core: what every platform shares, written once."""
