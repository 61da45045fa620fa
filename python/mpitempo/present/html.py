"""The HTML building blocks of the report's sections (present.report and the sections other modules
write: processing, studies, clocks): escaped text, a table, an embedded PNG."""
from __future__ import annotations

import base64
import html

from mpitempo.safe_text import safe_block


def esc(x) -> str:
    """HTML-escaped, control characters shown escaped (safe_text; HTML does not allow them)."""
    return html.escape(safe_block("" if x is None else str(x)))


def table(headers: list[str], rows: list[list], numeric_from: int = 1) -> str:
    out = ["<div class='scroll'><table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td class=\"{'n' if i >= numeric_from else ''}\">{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def img(png: bytes, alt: str) -> str:
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'
