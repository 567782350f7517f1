"""Prompt construction: templates compiled once, few-shot assembly, chat messages."""
