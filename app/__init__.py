"""Freezeframe's Qt side: the window, its widgets and the thread adapter. All Qt lives here."""
