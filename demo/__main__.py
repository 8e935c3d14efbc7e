"""``python -m demo``: the bundled demo level (``--help`` lists the modes)."""

from __future__ import annotations

import argparse
import sys

from .run import run_headless, run_screenshot, run_windowed


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 800x600, got {text!r}") from None
    if not (16 <= width <= 8192 and 16 <= height <= 8192):
        raise argparse.ArgumentTypeError(f"size must be 16 to 8192 pixels a side, got {text!r}")
    return width, height


def _positive(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m demo",
        description="panda3d-ccd demo: an arena of fast projectiles, bouncing balls, pillars "
        "and moving targets; compare the plugin with Panda3D's CollisionTraverser.",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--headless", action="store_true",
                      help="no window: run a fixed script and print a one-line summary "
                      "(exit code 1 if anything tunnelled)")
    mode.add_argument("--screenshot", metavar="PATH",
                      help="render one frame offscreen with the software renderer to a PNG")
    parser.add_argument("--frames", type=_positive, default=None,
                        help="frames to run (headless: 300; screenshot warm-up: 75)")
    parser.add_argument("--size", type=_size, default=None, metavar="WxH",
                        help="screenshot or window size (default 800x600, window 1280x800)")
    parser.add_argument("--system", choices=("plugin", "traverser"), default="plugin",
                        help="collision system to start with (default: plugin)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument("--balls", type=_positive, default=60,
                        help="bouncing balls at the start (default 60)")
    args = parser.parse_args(argv)
    if args.headless:
        return run_headless(300 if args.frames is None else args.frames, seed=args.seed,
                            system=args.system, balls=args.balls)
    if args.screenshot:
        return run_screenshot(args.screenshot, size=args.size or (800, 600),
                              frames=75 if args.frames is None else args.frames,
                              seed=args.seed, system=args.system, balls=args.balls)
    return run_windowed(seed=args.seed, system=args.system, balls=args.balls,
                        size=args.size or (1280, 800))


if __name__ == "__main__":
    sys.exit(main())
