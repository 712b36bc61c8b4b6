"""The top layer: the `cacheeval` CLI (`cli`), the Dagster definitions (`definitions`) and the jobs
that are not one asset group (`ui_job`, `dask_job`). Layer map: pipeline/README.md."""
