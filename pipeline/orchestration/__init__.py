"""What the Dagster assets take: the resources (build and evolve settings), the partitions and the
metadata helpers. Below `assets`, above every stage. Layer map: pipeline/README.md."""
