// The headers of every PDF the service sends (GET /api/invoices/{id}/pdf, /i/{token}.pdf):
// the type and no sniffing. The route adds Content-Disposition with the file name; caching
// is the context's (the API's `private, no-cache`, the hosted pages' `no-store`).

/** Headers of a PDF response. */
export const PDF_HEADERS = {
  'content-type': 'application/pdf',
  'x-content-type-options': 'nosniff',
} as const;
