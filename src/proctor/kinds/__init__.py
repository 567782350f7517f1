"""Task kinds: how a prepared sample becomes requests, and how responses become outcomes."""
