"""The market: cloud offers (dated prices, provider facts) and what a job costs on them."""
