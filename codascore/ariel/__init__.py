"""Ariel Data Challenge 2023."""
