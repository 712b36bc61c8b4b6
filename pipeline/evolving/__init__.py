"""The quarterly adversarial slice, a product of its own: quarters and the held-out pool (`slicing`),
scoring the candidates against the target (`scoring`), the blocking checks (`checks`) and the
report and manifest (`report`). Layer map: pipeline/README.md."""
