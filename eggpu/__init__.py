"""eggpu."""
