"""The generated runner modules live here (given to verify as generated text)."""
