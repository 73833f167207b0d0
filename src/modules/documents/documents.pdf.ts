// An invoice as a PDF (SPEC §14 "Documents"): the same view as the hosted page
// (documents.view.ts), laid out on A4 with pdfkit. Deterministic: the document's dates and
// file id come from the invoice (its `created_at`), never from the clock, so the same
// invoice always gives the same bytes (a test compares them).
//
// Fonts: pdfkit's built-in Helvetica covers WinAnsi only, so DejaVu Sans (the npm package
// dejavu-fonts-ttf; Latin, Greek, Cyrillic and more) is embedded, subset to the glyphs used.
// A character the font has no glyph for (CJK, emoji) prints as U+FFFD instead of an empty
// box, and direction controls are dropped (pdfkit lays text out left to right): a hostile
// or unusual name never breaks the document. The seller's logo (BUSINESS_LOGO_PATH, PNG or
// JPEG) comes as bytes read at start-up: rendering fetches nothing.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as fontkit from 'fontkit';
import PDFDocument from 'pdfkit';
import type { CreditNoteDocument, InvoiceDocument } from './documents.model.ts';
import { creditNoteView, type DocumentView, invoiceView } from './documents.view.ts';

const require = createRequire(import.meta.url);

interface Fonts {
  regular: Buffer;
  bold: Buffer;
  /** True when the regular and bold fonts both have a glyph for the code point. */
  covers: (codePoint: number) => boolean;
}

let fonts: Fonts | undefined;

/** DejaVu Sans and DejaVu Sans Bold, read once, with their shared coverage. */
function loadFonts(): Fonts {
  if (fonts) return fonts;
  const regular = readFileSync(require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf'));
  const bold = readFileSync(require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf'));
  const faces = [regular, bold].map((buffer) => fontkit.create(buffer) as fontkit.Font);
  const known = new Map<number, boolean>();
  const covers = (codePoint: number) => {
    let yes = known.get(codePoint);
    if (yes === undefined) known.set(codePoint, (yes = faces.every((face) => face.hasGlyphForCodePoint(codePoint))));
    return yes;
  };
  return (fonts = { regular, bold, covers });
}

// Direction marks, embeddings, overrides and isolates (U+200E/F, U+202A–E, U+2066–9): pdfkit
// lays out left to right and would print them as boxes.
const DIRECTION_CONTROLS = /[\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// C0 and C1 controls other than tab and line feed.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * `text` as the PDF prints it: direction controls dropped, control characters and characters
 * DejaVu Sans has no glyph for replaced by U+FFFD.
 */
export function printable(text: string): string {
  const { covers } = loadFonts();
  let out = '';
  for (const char of text.replace(DIRECTION_CONTROLS, '').replace(CONTROL, '\ufffd')) {
    const codePoint = char.codePointAt(0)!;
    out += char === '\n' || char === '\t' || covers(codePoint) ? char : '\ufffd';
  }
  return out;
}

const INK = '#111827';
const TEXT = '#374151';
const MUTED = '#6b7280';
const RULE = '#e5e7eb';
const STAMP: Record<string, string> = {
  paid: '#15803d',
  void: '#6b7280',
  uncollectible: '#b91c1c',
  draft: '#b45309',
};
const MARGIN = 50;
/** The box (pt) a logo is scaled to fit. */
const LOGO_BOX = { width: 160, height: 48 };
const FOOTER_SPACE = 40;

/**
 * The PDF of one invoice document (SPEC §14): seller and buyer (addresses, tax ids), number,
 * dates, status, every line (description, quantity, unit price, amount), the totals
 * (subtotal, discounts, taxes by rate, total, credit applied, amount due, paid, remaining),
 * notes and a stamp for a document that is not open (PAID, VOID, DRAFT …); "Page n of m" on
 * every page. Resolves to the file's bytes; the same document always gives the same bytes.
 */
export async function renderInvoicePdf(document: InvoiceDocument): Promise<Buffer> {
  return renderPdf(invoiceView(document), document.invoice.created_at);
}

/**
 * The PDF of one credit note document (SPEC §14 "Credit notes"), laid out as an invoice's:
 * "Credit note", number, the invoice credited, parties, the credited lines, how the amount
 * splits and the total, the memo; a void note is stamped. Same note, same bytes.
 */
export async function renderCreditNotePdf(document: CreditNoteDocument): Promise<Buffer> {
  return renderPdf(creditNoteView(document), document.creditNote.created_at);
}

/** `view` as PDF bytes, dated `createdAt` (ISO 8601: the document's own date, never the clock). */
async function renderPdf(view: DocumentView, createdAt: string): Promise<Buffer> {
  const { regular, bold } = loadFonts();
  const created = new Date(createdAt);
  const pdf = new PDFDocument({
    size: 'A4',
    margin: MARGIN,
    bufferPages: true,
    lang: view.lang,
    displayTitle: true,
    info: {
      Title: printable(view.title),
      Author: printable(view.seller.name ?? ''),
      Subject: printable(`${view.heading} ${view.number}`),
      Creator: 'billing-api',
      Producer: 'billing-api (pdfkit)',
      CreationDate: created,
      ModDate: created,
    },
  });
  pdf.registerFont('regular', regular);
  pdf.registerFont('bold', bold);
  const chunks: Buffer[] = [];
  pdf.on('data', (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise<Buffer>((resolve, reject) => {
    pdf.on('end', () => resolve(Buffer.concat(chunks)));
    pdf.on('error', reject);
  });
  layOut(pdf, view);
  pdf.end();
  return done;
}

type Pdf = InstanceType<typeof PDFDocument>;

/** Writes `text` in `font` at (x, y) within `width`, returning the y below it. */
function write(
  pdf: Pdf,
  text: string,
  x: number,
  y: number,
  options: { font?: 'regular' | 'bold'; size?: number; color?: string; width?: number; align?: 'left' | 'right' },
): number {
  const { font = 'regular', size = 10, color = TEXT, width, align = 'left' } = options;
  pdf.font(font).fontSize(size).fillColor(color);
  const printed = printable(text);
  pdf.text(printed, x, y, { width, align, lineGap: 2 });
  return y + pdf.heightOfString(printed, { width, lineGap: 2 });
}

function layOut(pdf: Pdf, view: DocumentView): void {
  const left = MARGIN;
  const right = pdf.page.width - MARGIN;
  const width = right - left;
  const bottom = () => pdf.page.height - MARGIN - FOOTER_SPACE;

  // Header: the logo and the seller name on the left; "INVOICE", number and status on the right.
  const titleWidth = 200;
  let sellerTop = MARGIN;
  if (view.seller.logo) {
    // Scaled to fit a 160 × 48 pt box, its aspect kept; the name goes below it.
    pdf.image(view.seller.logo.bytes, left, MARGIN, { fit: [LOGO_BOX.width, LOGO_BOX.height] });
    sellerTop += LOGO_BOX.height + 8;
  }
  const sellerBottom = write(pdf, view.seller.name ?? '', left, sellerTop, {
    font: 'bold',
    size: 18,
    color: INK,
    width: width - titleWidth - 20,
  });
  let y = write(pdf, view.heading.toLocaleUpperCase(view.lang), right - titleWidth, MARGIN, {
    size: 22,
    color: INK,
    width: titleWidth,
    align: 'right',
  });
  if (view.number)
    y = write(pdf, view.number, right - titleWidth, y + 2, { color: MUTED, width: titleWidth, align: 'right' });
  y = write(pdf, view.statusLabel.toLocaleUpperCase(view.lang), right - titleWidth, y + 4, {
    font: 'bold',
    size: 8,
    color: STAMP[view.status] ?? '#1e40af',
    width: titleWidth,
    align: 'right',
  });
  y = Math.max(y, sellerBottom) + 14;
  pdf.moveTo(left, y).lineTo(right, y).lineWidth(1.5).strokeColor(INK).stroke();
  y += 18;

  // What is due (or paid, or why nothing is); the stamp beside it.
  const summaryWidth = view.stamp ? width - 170 : width;
  y = write(pdf, view.summary.headline, left, y, { font: 'bold', size: 16, color: INK, width: summaryWidth });
  if (view.summary.detail) y = write(pdf, view.summary.detail, left, y + 2, { color: MUTED, width: summaryWidth });
  if (view.stamp) stamp(pdf, view.stamp.toLocaleUpperCase(view.lang), right - 150, y - 34, STAMP[view.status] ?? MUTED);
  y += 22;

  // Seller and buyer on the left; number, dates, period and currency on the right.
  const partyWidth = width * 0.38;
  let partyY = y;
  for (const party of [view.seller, view.buyer]) {
    partyY = write(pdf, party.heading.toLocaleUpperCase(view.lang), left, partyY, {
      font: 'bold',
      size: 7.5,
      color: MUTED,
      width: partyWidth,
    });
    if (party.name !== null) {
      partyY = write(pdf, party.name, left, partyY + 2, { font: 'bold', color: INK, width: partyWidth });
    }
    for (const line of party.lines) partyY = write(pdf, line, left, partyY, { width: partyWidth });
    partyY += 12;
  }
  let metaY = y;
  const metaLeft = left + partyWidth + 20;
  const metaWidth = right - metaLeft;
  pdf.font('regular').fontSize(10);
  const termWidth = Math.min(
    Math.max(...view.meta.map(([term]) => pdf.widthOfString(printable(term)))) + 12,
    metaWidth / 2,
  );
  for (const [term, value] of view.meta) {
    const termBottom = write(pdf, term, metaLeft, metaY, { color: MUTED, width: termWidth });
    const valueBottom = write(pdf, value, metaLeft + termWidth, metaY, {
      color: INK,
      width: metaWidth - termWidth,
      align: 'right',
    });
    metaY = Math.max(termBottom, valueBottom) + 2;
  }
  y = Math.max(partyY, metaY) + 8;

  // The lines: description, quantity, unit price, amount; the header again on each new page.
  const numWidth = 85;
  const qtyWidth = 40;
  const columns = {
    description: { x: left, width: width - qtyWidth - 2 * numWidth - 30 },
    quantity: { x: right - 2 * numWidth - qtyWidth - 20, width: qtyWidth },
    unitPrice: { x: right - 2 * numWidth - 10, width: numWidth },
    amount: { x: right - numWidth, width: numWidth },
  };
  const tableHeader = () => {
    const labels = view.columns;
    for (const key of ['description', 'quantity', 'unitPrice', 'amount'] as const) {
      write(pdf, labels[key].toLocaleUpperCase(view.lang), columns[key].x, y, {
        font: 'bold',
        size: 7.5,
        color: MUTED,
        width: columns[key].width,
        align: key === 'description' ? 'left' : 'right',
      });
    }
    y += 14;
    pdf.moveTo(left, y).lineTo(right, y).lineWidth(1).strokeColor(INK).stroke();
    y += 8;
  };
  tableHeader();
  for (const line of view.lines) {
    pdf.font('regular').fontSize(10);
    const height = pdf.heightOfString(printable(line.description), { width: columns.description.width, lineGap: 2 });
    if (y + height + 10 > bottom()) {
      pdf.addPage();
      y = MARGIN;
      tableHeader();
    }
    write(pdf, line.description, columns.description.x, y, { color: INK, width: columns.description.width });
    write(pdf, line.quantity, columns.quantity.x, y, { width: columns.quantity.width, align: 'right' });
    write(pdf, line.unitPrice, columns.unitPrice.x, y, { width: columns.unitPrice.width, align: 'right' });
    write(pdf, line.amount, columns.amount.x, y, { color: INK, width: columns.amount.width, align: 'right' });
    y += height + 6;
    pdf.moveTo(left, y).lineTo(right, y).lineWidth(0.5).strokeColor(RULE).stroke();
    y += 8;
  }

  // The totals, right-aligned; the total and what remains emphasised.
  y += 6;
  const totalsLeft = right - 260;
  for (const row of view.totals) {
    if (y + 24 > bottom()) {
      pdf.addPage();
      y = MARGIN;
    }
    if (row.emphasis) {
      pdf
        .moveTo(totalsLeft, y)
        .lineTo(right, y)
        .lineWidth(row.emphasis === 'remaining' ? 1.5 : 0.5)
        .strokeColor(row.emphasis === 'remaining' ? INK : RULE)
        .stroke();
      y += 5;
    }
    const font = row.emphasis ? 'bold' : 'regular';
    const size = row.emphasis === 'remaining' ? 12 : 10;
    const labelBottom = write(pdf, row.label, totalsLeft, y, {
      font,
      size,
      color: row.emphasis ? INK : TEXT,
      width: 160,
    });
    write(pdf, row.amount, right - 100, y, { font, size, color: INK, width: 100, align: 'right' });
    y = labelBottom + 4;
  }

  for (const note of view.notes) {
    pdf.font('regular').fontSize(10);
    const height = pdf.heightOfString(printable(note), { width: width - 20, lineGap: 2 });
    if (y + height + 40 > bottom()) {
      pdf.addPage();
      y = MARGIN;
    }
    y += 18;
    pdf
      .rect(left, y, width, height + 16)
      .fillColor('#f3f4f6')
      .fill();
    y = write(pdf, note, left + 10, y + 8, { width: width - 20 }) + 8;
  }

  // Every page: a rule, the footer (number · amount due · status, and the seller), "Page n of m".
  const { start, count } = pdf.bufferedPageRange();
  for (let index = start; index < start + count; index += 1) {
    pdf.switchToPage(index);
    const footerY = pdf.page.height - MARGIN - 20;
    // Writing below the bottom margin would start a new page: the footer is placed with the margin lifted.
    pdf.page.margins.bottom = 0;
    pdf
      .moveTo(left, footerY - 6)
      .lineTo(right, footerY - 6)
      .lineWidth(0.5)
      .strokeColor(RULE)
      .stroke();
    write(pdf, view.footer, left, footerY, { size: 8, color: MUTED, width: width / 2 });
    write(
      pdf,
      `${view.seller.name ?? ''} · ${view.messages.pageOf(index - start + 1, count)}`,
      left + width / 2,
      footerY,
      {
        size: 8,
        color: MUTED,
        width: width / 2,
        align: 'right',
      },
    );
  }
}

/** The stamp across a document that is not open: its status in a rotated box. */
function stamp(pdf: Pdf, label: string, x: number, y: number, color: string): void {
  pdf.save();
  pdf.rotate(-8, { origin: [x + 70, y + 20] });
  pdf.opacity(0.75);
  pdf.font('bold').fontSize(label.length > 10 ? 14 : 22);
  const text = printable(label);
  const textWidth = Math.min(pdf.widthOfString(text), 200);
  pdf
    .roundedRect(x, y, textWidth + 24, 38, 6)
    .lineWidth(3)
    .strokeColor(color)
    .stroke();
  pdf.fillColor(color).text(text, x + 12, y + (label.length > 10 ? 12 : 7), { width: textWidth + 2, lineBreak: false });
  pdf.restore();
}
