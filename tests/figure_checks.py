"""What a reader gets of a figure file: its PDF's fonts and its PNG's pixels."""
import matplotlib.image as mpimg


def fonts_are_truetype(pdf_bytes):
    """No Type 3 font (glyphs as drawing procedures), and TrueType embedded: matplotlib's fonttype 42
    writes a Type 0 font over a CIDFontType2 (TrueType outlines) in 3.11."""
    return b"/Subtype /Type3" not in pdf_bytes and (b"/CIDFontType2" in pdf_bytes or b"/Subtype /TrueType" in pdf_bytes)


def png_is_drawn(path, min_side=400):
    """The PNG is a figure's size and not one colour (a blank preview)."""
    pixels = mpimg.imread(path)
    return min(pixels.shape[:2]) > min_side and pixels[..., :3].std() > 0.05
