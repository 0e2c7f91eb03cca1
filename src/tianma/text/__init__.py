"""Text analysis every layer shares: tokenising (Chinese and English), extracting facts,
statements and actions from a message. Pure functions; imports no other tianma package."""
