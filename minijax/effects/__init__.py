"""Handling effects: harvest (`sow`/`reap`/`plant`), handlers of user-defined effects,
pictures of jaxprs with their effects, and state (`discharge_state`, `run_state`).  A plain
list of exports of the modules."""
from minijax.effects.harvest import (SowEffect, call_and_reap, harvest, nest, plant, reap,  # noqa: F401
                                     sow, sow_p)
from minijax.effects.handlers import (Handler, Operation, UnhandledEffectError, UserEffect,  # noqa: F401
                                      define_effect, handle, perform_p)
from minijax.effects.pictures import Picture, draw, picture  # noqa: F401
from minijax.effects.state import discharge_state, run_state  # noqa: F401
