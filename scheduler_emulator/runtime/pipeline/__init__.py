"""The attempt pipeline: the recorder carries out the core's decisions and records each attempt;
the drivers decide when and in which thread it is sent; the delivery pool bounds attempts in
progress per job."""
