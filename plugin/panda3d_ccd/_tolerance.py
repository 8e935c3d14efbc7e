"""Every numerical tolerance the plugin uses, in one place.

The kernels themselves are exact up to float64 rounding; these constants only decide what
counts as "the same" where rounding makes an exact comparison meaningless.
"""

import math

#: Relative tolerance on a time of impact, as a fraction of the frame.
TIME_EPS = 1e-12

#: Relative distance tolerance: two surfaces closer than this fraction of the scene scale
#: (largest of coordinate magnitude, radius and motion) are touching.
DIST_REL_EPS = 1e-9

#: Rounding noise of a difference of float64 coordinates, relative to their magnitude: a
#: few ulps, with a safety factor for positions that were themselves computed
#: (a1 = a0 + d). Not a modelling tolerance: it only keeps noise from deciding
#: "approaching" in the kernels.
ROUNDING_REL = 64 * 2.220446049250313e-16

#: A triangle whose doubled area |(b - a) x (c - a)| is at most this fraction of its longest
#: edge squared is degenerate: its normal would be rounding noise, so it acts as its edges and
#: vertices. The face dropped is at most 1e-12 of the edge wide, and a slab that thin lies
#: within the edges' cylinders to ~1e-24 of the edge squared over the radius.
DEGENERATE_REL = 1e-12

#: Linear slop, relative to the coordinates' magnitude (at least 1): a contact that could
#: never sink deeper than this does not count. Panda3D stores positions in float32
#: (about 6e-8 relative), so motion along a surface reads as up to ~1e-7 into it.
SLOP_REL = 1e-6

#: How far a body smaller than the float32 rounding of its coordinates (a point) is left in
#: front of a polygon it stopped on, relative to its coordinates' magnitude (at least 1):
#: two float32 spacings, a quarter of the slop. Written back touching, it would land on
#: the plane or a rounding beyond it, where which side it is on is lost (see ``_skin``).
SKIN_REL = 2.0 * 2.0**-23

#: How far outside a triangle's edge a ray (a point cast) still hits it, relative to the
#: triangle's coordinates' magnitude. Panda3D keeps a CollisionPolygon as 2-d points and a
#: float32 matrix, and rebuilds its corners from them: the corners two polygons share then
#: differ, and open seams, by up to 4e-7 of the coordinates near the origin, 1.2e-6 at
#: 30 and 2e-5 at 800 (a terrain of 1.7-unit cells, measured). A ray threading such a
#: seam would fall through a mesh; 3e-5 closes them (a graze of 2.4 cm at 800).
SEAM_REL = 3e-5

#: Corners of two triangles closer than about this fraction of their magnitude (rounded
#: up to a power of two) are one corner when a level's shared edges are found
#: (:func:`~._pieces.shared_edges`): a thousand float32 ulps, far above the few by which
#: Panda3D rebuilds shared corners apart (see ``SEAM_REL``), below the size of any
#: triangle worth a seam (1 mm at 10 units, 3 cm at 500).
WELD_REL = 2.0**-14

#: The most two copies of a polygon corner may be apart to be welded into one, as a
#: fraction of the shortest edge of either triangle (besides Panda3D's own rebuild error
#: there, see :func:`~._pieces.seams`): a modelled step or slit is not a crack.
WELD_GAP = 0.02

#: Two triangles on one edge whose third corners lie within 2 degrees of the same way
#: from it (this cosine) are folded onto each other (a thin slab's faces), not a seam: a
#: slab thinner than ``WELD_GAP`` of its width is folded by more.
WELD_FOLDED = math.cos(math.radians(2.0))

#: Upper bound on the number of resolution rounds in one pass before the solver gives up,
#: holds the unresolved colliders where they are safe and warns.
MAX_ROUNDS = 256

#: How many times one `slide` collider may be deflected within a single pass.
MAX_SLIDES = 8

#: A path that turns (a level piece's frame, a body carried round by one) is tested on its
#: chord, inflated by how far it may stray from it; where that is more than this fraction
#: of the body's radius (and the slop), the pass is cut into sub-steps. So far a body may
#: stop short of what turns, or of anything while it turns.
TURN_TOLERANCE = 0.02

#: Most sub-steps a turning path's pass is cut into, per pair.
MAX_SUBSTEPS = 32
