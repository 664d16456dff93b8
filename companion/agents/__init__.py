"""Reinforcement-learning agents built in the book's chapters."""
