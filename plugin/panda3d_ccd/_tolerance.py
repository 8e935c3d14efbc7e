"""Every numerical tolerance the plugin uses, in one place.

The kernels themselves are exact up to float64 rounding; these constants only decide what
counts as "the same" where rounding makes an exact comparison meaningless.
"""

#: Relative tolerance on a time of impact, as a fraction of the frame.
TIME_EPS = 1e-12

#: Relative distance tolerance: two surfaces closer than this fraction of the scene scale
#: (largest of coordinate magnitude, radius and motion) are touching.
DIST_REL_EPS = 1e-9

#: Upper bound on the number of resolution rounds in one pass before the solver gives up,
#: holds the unresolved colliders where they are safe and warns.
MAX_ROUNDS = 64

#: How many times one `slide` collider may be deflected within a single pass.
MAX_SLIDES = 8
