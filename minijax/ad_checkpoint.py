"""`minijax.ad_checkpoint`: `checkpoint` (remat), `checkpoint_name` and the checkpoint
policies, under the names of `jax.ad_checkpoint` (defined in `minijax.lax.remat`)."""
from minijax.lax.remat import (checkpoint, checkpoint_name, checkpoint_policies,
                               dots_saveable, dots_with_no_batch_dims_saveable,
                               everything_saveable, name_p, nothing_saveable, remat,
                               save_any_names_but_these, save_from_both_policies,
                               save_only_these_names)

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "dots_saveable",
           "dots_with_no_batch_dims_saveable", "everything_saveable", "name_p",
           "nothing_saveable", "remat", "save_any_names_but_these",
           "save_from_both_policies", "save_only_these_names"]
