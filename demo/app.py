"""Everything the demo shows on screen: camera, HUD, projectile trails, keys and mouse.

Used by the windowed game and by the offscreen screenshot; the headless run needs none of
it. The level (:mod:`demo.level`) knows nothing about this module.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from direct.gui.DirectFrame import DirectFrame
from direct.gui.OnscreenText import OnscreenText
from direct.showbase.DirectObject import DirectObject
from panda3d.core import (
    ClockObject,
    Geom,
    GeomNode,
    GeomTriangles,
    GeomVertexData,
    GeomVertexFormat,
    GeomVertexWriter,
    LPlane,
    LPoint3,
    LVector3,
    NodePath,
    TextNode,
    TransparencyAttrib,
)

from .arena import WALL_HEIGHT
from .level import HALF, HEIGHT, Level

__all__ = ["DemoApp", "KEYS_LINE"]

KEYS_LINE = (
    "WASD/arrows move   space/mouse fire   F autofire   C plugin/traverser   "
    "Shift+D debug   B +500 balls   R reset   Esc quit"
)
TRAIL_TAIL = (1.0, 0.35, 0.05, 0.0)
TRAIL_HEAD = (1.0, 1.0, 0.7, 1.0)
SYSTEM_TITLES = {"plugin": "panda3d-ccd plugin", "traverser": "Panda3D CollisionTraverser"}
STEER_KEYS = {
    "w": (0, 1), "arrow_up": (0, 1), "s": (0, -1), "arrow_down": (0, -1),
    "a": (-1, 0), "arrow_left": (-1, 0), "d": (1, 0), "arrow_right": (1, 0),
}


class DemoApp(DirectObject):
    """Screen-side wiring of a :class:`~demo.level.Level`.

    Parameters
    ----------
    base : ShowBase
        With a window or an offscreen buffer.
    level : Level
    interactive : bool
        Bind keys and the mouse (the windowed game); the screenshot leaves them off.
    """

    def __init__(self, base: Any, level: Level, *, interactive: bool) -> None:
        super().__init__()
        self.base = base
        self.level = level
        self.clock = ClockObject.getGlobalClock()
        base.setBackgroundColor(0.09, 0.10, 0.13, 1)
        base.disableMouse()
        self._frame_arena()
        self._font = base.loader.loadFont("cmtt12.egg")
        self._trails = level.root.attachNewNode("trails")
        self._trails.setLightOff(1)
        self._trails.setTransparency(TransparencyAttrib.MAlpha)
        self._trails.setTwoSided(True)
        self._trails.setDepthWrite(False)
        self._trails.setBin("transparent", 10)
        self._trail_geom: NodePath | None = None
        self._build_hud()
        level.on_frame.append(self._on_frame)
        self._held: set[str] = set()
        if interactive:
            self._bind()

    def _frame_arena(self, pitch: float = 58.0) -> None:
        """Look down on the arena from the south, as close as keeps all of it in view
        (between the HUD's top and the key line), whatever the window's aspect ratio."""
        lens = self.base.camLens
        lens.setFov(lens.getHfov() if lens.getAspectRatio() < 1.2 else 56.0)
        look_at = LPoint3(0, -HALF * 0.06, 0)
        direction = LVector3(0, math.cos(math.radians(pitch)), -math.sin(math.radians(pitch)))
        edge = HALF + 1.2
        corners = [LPoint3(x, y, z) for x in (-edge, edge) for y in (-edge, edge)
                   for z in (0.0, WALL_HEIGHT)]
        camera = self.base.camera
        for distance in range(30, 400, 2):
            camera.setPos(look_at - direction * distance)
            camera.lookAt(look_at)
            seen = []
            for corner in corners:
                projected = LPoint3()
                inside = lens.project(self.base.cam.getRelativePoint(self.level.render,
                                                                     corner), projected)
                seen.append(inside and abs(projected[0]) < 0.97
                            and -0.86 < projected[1] < 0.72)
            if all(seen):
                return

    # ------------------------------------------------------------------ HUD
    def _text(self, parent: NodePath, pos: tuple[float, float], scale: float,
              colour: tuple[float, float, float, float], mono: bool = False,
              align: int = TextNode.ALeft) -> OnscreenText:
        return OnscreenText(
            parent=parent, pos=pos, scale=scale, fg=colour, shadow=(0, 0, 0, 0.85),
            align=align, mayChange=True, font=self._font if mono else None, text="",
        )

    def _build_hud(self) -> None:
        top_left = self.base.a2dTopLeft
        self._panel = DirectFrame(parent=top_left, frameColor=(0.02, 0.03, 0.06, 0.62),
                                  frameSize=(0.0, 1.3, -0.43, 0.0), pos=(0.02, 0, -0.02))
        self._panel.setTransparency(TransparencyAttrib.MAlpha)
        white, grey = (1, 1, 1, 1), (0.78, 0.82, 0.9, 1)
        self._title = self._text(top_left, (0.05, -0.08), 0.055, (1, 0.85, 0.35, 1))
        self._title.setText("panda3d-ccd  continuous collision demo")
        self._mode = self._text(top_left, (0.05, -0.145), 0.042, white)
        self._table = self._text(top_left, (0.05, -0.215), 0.043, white, mono=True)
        self._info = self._text(top_left, (0.05, -0.39), 0.038, grey, mono=True)
        self._keys = self._text(self.base.a2dBottomCenter, (0, 0.05), 0.042, grey,
                                align=TextNode.ACenter)
        self._keys.setText(KEYS_LINE)

    def _on_frame(self) -> None:
        """After each audit: refresh the HUD and the projectile trails."""
        level = self.level
        current = level.system.name
        self._mode.setText(
            f"collision: {SYSTEM_TITLES[current]}   (C switches)"
            + ("   autofire" if level.autofire else "")
        )
        rows = ["             caught  missed  tunnelled  ms/frame"]
        for name in ("plugin", "traverser"):
            s = level.stats[name]
            mark = ">" if name == current else " "
            ms = f"{s.recent_ms:10.2f}"
            rows.append(
                f"{mark} {name:<10}{s.caught:>7}{s.missed:>8}{len(s.tunnelled):>11}{ms}"
            )
        self._table.setText("\n".join(rows))
        fps = self.clock.getAverageFrameRate()
        self._info.setText(
            f"{fps:5.1f} fps   {level.system.colliders} colliders   "
            f"{level.count('ball')} balls   score {level.stats[current].score}"
        )
        self._draw_trails()

    def _draw_trails(self) -> None:
        """A flat ribbon behind each projectile over this frame's move, fading to its tail."""
        data = GeomVertexData("trails", GeomVertexFormat.getV3c4(), Geom.UHStream)
        vertex = GeomVertexWriter(data, "vertex")
        colour = GeomVertexWriter(data, "color")
        tris = GeomTriangles(Geom.UHStream)
        count = 0
        for body in self.level.of_kind("projectile"):
            head = np.array(body.np.getPos(self.level.render), float)
            tail = np.asarray(body.p0, float)
            step = head - tail
            length = float(np.hypot(step[0], step[1]))
            if length < 1e-6:
                continue
            side = np.array([-step[1], step[0], 0.0]) / length * body.radius
            for point, rgba in ((tail - side, TRAIL_TAIL), (tail + side, TRAIL_TAIL),
                                (head + side, TRAIL_HEAD), (head - side, TRAIL_HEAD)):
                vertex.addData3(*point)
                colour.addData4(*rgba)
            tris.addVertices(count, count + 1, count + 2)
            tris.addVertices(count, count + 2, count + 3)
            count += 4
        if self._trail_geom is not None:
            self._trail_geom.removeNode()
            self._trail_geom = None
        if count:
            geom = Geom(data)
            geom.addPrimitive(tris)
            node = GeomNode("trails")
            node.addGeom(geom)
            self._trail_geom = self._trails.attachNewNode(node)

    # ------------------------------------------------------------------ controls
    def _bind(self) -> None:
        for key in STEER_KEYS:
            self.accept(key, self._press, [key])
            self.accept(f"{key}-up", self._release, [key])
        for key in ("space", "mouse1"):
            self.accept(key, self._press, [key])
            self.accept(f"{key}-up", self._release, [key])
        self.accept("c", self.level.switch_system)
        # Plain d steers (WASD), so the debug view is on capital D.
        self.accept("shift-d", self._toggle_debug)
        self.accept("f", self._toggle_autofire)
        self.accept("b", self.level.spawn_balls, [500])
        self.accept("r", self.level.reset)
        self.accept("escape", self.base.userExit)
        self.addTask(self._input, "demo-input", sort=5)

    def _press(self, key: str) -> None:
        self._held.add(key)

    def _release(self, key: str) -> None:
        self._held.discard(key)

    def _toggle_debug(self) -> None:
        self.level.set_debug(not self.level.debug)

    def _toggle_autofire(self) -> None:
        self.level.autofire = not self.level.autofire

    def _input(self, task: Any) -> int:
        """Keys to the player's steering, the mouse to the cannon's aim."""
        x = sum(STEER_KEYS[k][0] for k in self._held if k in STEER_KEYS)
        y = sum(STEER_KEYS[k][1] for k in self._held if k in STEER_KEYS)
        self.level.steer = np.array([x, y, 0.0])
        self.level.firing = bool(self._held & {"space", "mouse1"})
        self.level.aim = self._mouse_heading()
        return task.cont

    def _mouse_heading(self) -> float | None:
        """Cannon heading (degrees) toward the point under the mouse, or None."""
        watcher = self.base.mouseWatcherNode
        if watcher is None or not watcher.hasMouse():
            return None
        near, far = LPoint3(), LPoint3()
        self.base.camLens.extrude(watcher.getMouse(), near, far)
        render = self.level.render
        near = render.getRelativePoint(self.base.cam, near)
        far = render.getRelativePoint(self.base.cam, far)
        hit = LPoint3()
        if not LPlane(LVector3(0, 0, 1), LPoint3(0, 0, HEIGHT)).intersectsLine(hit, near, far):
            return None
        cannon = self.level.cannon.getPos(render)
        dx, dy = hit[0] - cannon[0], hit[1] - cannon[1]
        return max(-85.0, min(85.0, math.degrees(math.atan2(-dx, dy))))

    def destroy(self) -> None:
        self.ignoreAll()
        self.removeAllTasks()
        for text in (self._title, self._mode, self._table, self._info, self._keys):
            text.destroy()
        self._panel.destroy()
        self._trails.removeNode()

