"""What crosses the pipes between the supervisor and its worker: both processes import it."""
