"""Asset group names: one group per asset module (assets/<group>.py), the stages of the flow.

STAGES lists them left to right, the order the Dagster UI lays them out and the build runs them."""
SOURCES = "sources"
GENERATION = "generation"
VERIFICATION = "verification"
SELECTION = "selection"
DIFFICULTY = "difficulty"
ASSEMBLY = "assembly"
EVALUATION = "evaluation"
PUBLICATION = "publication"
MANIFEST = "manifest"
# Not a stage of the build: the quarterly adversarial slice (assets/evolving.py), run by its own schedule.
EVOLVING = "evolving"

STAGES = (SOURCES, GENERATION, VERIFICATION, SELECTION, DIFFICULTY, ASSEMBLY, EVALUATION, PUBLICATION, MANIFEST)
