"""Freezeframe's Qt side: the window, its widgets and its link to the training process. All Qt lives here."""
