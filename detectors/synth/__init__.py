"""Synthetic 福 scenes: glyph bank, backgrounds, scene and clip rendering (numpy + OpenCV)."""
