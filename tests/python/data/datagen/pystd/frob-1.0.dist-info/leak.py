"""Never read: inside dist-info."""
def leaked(x):
    """Reserved metadata directory content."""
