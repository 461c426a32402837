"""Planning: the changes that make a job fit (advice), pricing across offers, and ``recommend``."""
