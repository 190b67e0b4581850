"""What a person reads: the HTML report (page.py and its panels) and the terminal's tables."""
