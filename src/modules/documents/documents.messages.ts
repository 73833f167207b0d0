// The message catalogue of documents (SPEC §14 "Documents"): every word the hosted invoice
// page, its problem pages and the PDF print, in each of DOCUMENT_LANGUAGES. A sentence with
// a value is a function of the value, already formatted (money, dates: documents.format.ts);
// user text inside a sentence comes isolated (documents.view.ts). Adding a language is one
// entry here and its code in shared/locales.ts; tsc fails until every message is written.
import type { DocumentLanguage } from '../../shared/locales.ts';
import type { CreditNoteReason, CreditNoteStatus } from '../../db/tables/credit-notes.table.ts';
import type { InvoiceStatus } from '../invoices/invoices.status.ts';

/** One language's words. */
export interface Messages {
  invoice: string;
  invoiceNumber: string;
  dateOfIssue: string;
  dateDue: string;
  period: string;
  currency: string;
  from: string;
  billedTo: string;
  taxId: string;
  /** `label: value` with the language's punctuation (French puts a no-break space before the colon). */
  labelled: (label: string, value: string) => string;
  description: string;
  quantity: string;
  unitPrice: string;
  amount: string;
  subtotal: string;
  discount: string;
  tax: string;
  total: string;
  creditApplied: string;
  creditNotes: string;
  amountDue: string;
  amountPaid: string;
  amountRemaining: string;
  reverseCharge: string;
  reverseChargeNote: string;
  status: Record<InvoiceStatus, string>;
  dueOn: (amount: string, date: string) => string;
  paidAmount: (amount: string) => string;
  paidOn: (date: string) => string;
  nothingToPay: string;
  voided: (date: string | null) => string;
  outstanding: (amount: string) => string;
  wasDue: (date: string) => string;
  voidNote: (business: string) => string;
  uncollectibleNote: (business: string) => string;
  draftNote: string;
  pay: (amount: string) => string;
  payWith: (provider: string) => string;
  /** A tax rate's row: its name and percentage, and whether the lines already include it. */
  taxRate: (name: string, percent: string, inclusive: boolean) => string;
  pageOf: (page: number, pages: number) => string;
  downloadPdf: string;
  problems: Record<404 | 429 | 500 | 503, { title: string; text: string }>;
  backToInvoice: string;
  continueTitle: string;
  continueText: (provider: string) => string;
  continueTo: (provider: string) => string;
  /** A credit note's PDF (SPEC §14 "Credit notes"). */
  creditNote: CreditNoteMessages;
}

/** The words of a credit note's document: title, its fields and how its amount splits. */
export interface CreditNoteMessages {
  title: string;
  number: string;
  /** The label of the invoice the note credits (its number). */
  invoice: string;
  /** The date of issue and the buyer's heading: an invoice's words ("Rechnungsdatum", "Rechnung an") would be wrong. */
  date: string;
  to: string;
  reason: string;
  reasons: Record<CreditNoteReason, string>;
  status: Record<CreditNoteStatus, string>;
  /** The headline: the whole credit. */
  credited: (amount: string) => string;
  /** Under the headline: the invoice credited. */
  forInvoice: (number: string) => string;
  /** The one line of a note issued for an amount (no invoice lines). */
  amountLine: string;
  /** pre_payment_amount, refund_amount, credit_amount, out_of_band_amount. */
  prePayment: string;
  refund: string;
  credit: string;
  outOfBand: string;
  memo: string;
  /** The hosted credit note page's 404 (any unknown or malformed token) and 500; its 429 is the invoice page's. */
  problems: Record<404 | 500, { title: string; text: string }>;
}

const en: Messages = {
  invoice: 'Invoice',
  invoiceNumber: 'Invoice number',
  dateOfIssue: 'Date of issue',
  dateDue: 'Date due',
  period: 'Period',
  currency: 'Currency',
  from: 'From',
  billedTo: 'Billed to',
  taxId: 'Tax ID',
  labelled: (label, value) => `${label}: ${value}`,
  description: 'Description',
  quantity: 'Qty',
  unitPrice: 'Unit price',
  amount: 'Amount',
  subtotal: 'Subtotal',
  discount: 'Discount',
  tax: 'Tax',
  total: 'Total',
  creditApplied: 'Credit applied',
  creditNotes: 'Credit notes',
  amountDue: 'Amount due',
  amountPaid: 'Amount paid',
  amountRemaining: 'Amount remaining',
  reverseCharge: 'Reverse charge',
  reverseChargeNote: 'Reverse charge: VAT is to be accounted for by the customer.',
  status: { draft: 'Draft', open: 'Open', paid: 'Paid', void: 'Void', uncollectible: 'Uncollectible' },
  dueOn: (amount, date) => `${amount} due ${date}`,
  paidAmount: (amount) => `${amount} paid`,
  paidOn: (date) => `Paid on ${date}. Thank you.`,
  nothingToPay: 'Nothing to pay',
  voided: (date) => (date ? `This invoice was voided on ${date}.` : 'This invoice was voided.'),
  outstanding: (amount) => `${amount} outstanding`,
  wasDue: (date) => `Was due ${date}.`,
  voidNote: (business) => `This invoice has been voided by ${business}. No payment is due on it.`,
  uncollectibleNote: (business) =>
    `This invoice is overdue and has been marked uncollectible. Please contact ${business} to settle it.`,
  draftNote: 'This is a draft: it is not final and cannot be paid yet.',
  pay: (amount) => `Pay ${amount}`,
  payWith: (provider) => `Secure payment with ${provider}`,
  taxRate: (name, percent, inclusive) => `${name} ${percent}${inclusive ? ' (included)' : ''}`,
  pageOf: (page, pages) => `Page ${page} of ${pages}`,
  downloadPdf: 'Download PDF',
  problems: {
    404: {
      title: 'Invoice not found',
      text: 'This invoice link is not valid. Check that you copied the whole link from your email, or ask the sender for a new one.',
    },
    429: {
      title: 'Too many requests',
      text: 'This page was requested too often from your network. Please wait a minute and try again.',
    },
    500: {
      title: 'Invoice unavailable',
      text: 'This invoice cannot be shown right now. Please try again in a few minutes.',
    },
    503: {
      title: 'Payment not started',
      text: 'The payment provider could not be reached, so your payment was not started and nothing was charged. Please try again in a few minutes.',
    },
  },
  backToInvoice: 'Back to the invoice',
  continueTitle: 'Continue to payment',
  continueText: (provider) => `Your payment page at ${provider} is ready.`,
  continueTo: (provider) => `Continue to ${provider}`,
  creditNote: {
    title: 'Credit note',
    number: 'Credit note number',
    invoice: 'Invoice credited',
    date: 'Date of issue',
    to: 'Issued to',
    reason: 'Reason',
    reasons: {
      duplicate: 'Duplicate',
      fraudulent: 'Fraudulent',
      order_change: 'Order change',
      product_unsatisfactory: 'Product unsatisfactory',
    },
    status: { issued: 'Issued', void: 'Void' },
    credited: (amount) => `${amount} credited`,
    forInvoice: (number) => `Credits invoice ${number}`,
    amountLine: 'Credit',
    prePayment: 'Taken off the amount due',
    refund: 'Refunded',
    credit: 'Credited to balance',
    outOfBand: 'Returned out of band',
    memo: 'Memo',
    problems: {
      404: {
        title: 'Credit note not found',
        text: 'This credit note link is not valid. Check that you copied the whole link from your email, or ask the sender for a new one.',
      },
      500: {
        title: 'Credit note unavailable',
        text: 'This credit note cannot be shown right now. Please try again in a few minutes.',
      },
    },
  },
};

const fr: Messages = {
  invoice: 'Facture',
  invoiceNumber: 'Numéro de facture',
  dateOfIssue: 'Date d’émission',
  dateDue: 'Date d’échéance',
  period: 'Période',
  currency: 'Devise',
  from: 'Émetteur',
  billedTo: 'Facturé à',
  taxId: 'Identifiant fiscal',
  labelled: (label, value) => `${label}\u00a0: ${value}`,
  description: 'Description',
  quantity: 'Qté',
  unitPrice: 'Prix unitaire',
  amount: 'Montant',
  subtotal: 'Sous-total',
  discount: 'Remise',
  tax: 'Taxe',
  total: 'Total',
  creditApplied: 'Crédit appliqué',
  creditNotes: 'Avoirs',
  amountDue: 'Montant dû',
  amountPaid: 'Montant payé',
  amountRemaining: 'Reste à payer',
  reverseCharge: 'Autoliquidation',
  reverseChargeNote: 'Autoliquidation\u00a0: la TVA est due par le preneur.',
  status: { draft: 'Brouillon', open: 'Ouverte', paid: 'Payée', void: 'Annulée', uncollectible: 'Irrécouvrable' },
  dueOn: (amount, date) => `${amount} à payer avant le ${date}`,
  paidAmount: (amount) => `${amount} payés`,
  paidOn: (date) => `Payée le ${date}. Merci.`,
  nothingToPay: 'Rien à payer',
  voided: (date) => (date ? `Cette facture a été annulée le ${date}.` : 'Cette facture a été annulée.'),
  outstanding: (amount) => `${amount} impayés`,
  wasDue: (date) => `Échéance\u00a0: ${date}.`,
  voidNote: (business) => `Cette facture a été annulée par ${business}. Aucun paiement n’est dû.`,
  uncollectibleNote: (business) =>
    `Cette facture est en retard et a été déclarée irrécouvrable. Veuillez contacter ${business} pour la régler.`,
  draftNote: 'Ceci est un brouillon\u00a0: la facture n’est pas définitive et ne peut pas encore être payée.',
  pay: (amount) => `Payer ${amount}`,
  payWith: (provider) => `Paiement sécurisé avec ${provider}`,
  taxRate: (name, percent, inclusive) => `${name} ${percent}${inclusive ? ' (incluse)' : ''}`,
  pageOf: (page, pages) => `Page ${page} sur ${pages}`,
  downloadPdf: 'Télécharger le PDF',
  problems: {
    404: {
      title: 'Facture introuvable',
      text: 'Ce lien de facture n’est pas valide. Vérifiez que vous avez copié le lien complet depuis votre e-mail, ou demandez-en un nouveau à l’expéditeur.',
    },
    429: {
      title: 'Trop de requêtes',
      text: 'Cette page a été demandée trop souvent depuis votre réseau. Veuillez patienter une minute et réessayer.',
    },
    500: {
      title: 'Facture indisponible',
      text: 'Cette facture ne peut pas être affichée pour le moment. Veuillez réessayer dans quelques minutes.',
    },
    503: {
      title: 'Paiement non démarré',
      text: 'Le prestataire de paiement n’a pas pu être joint\u00a0: votre paiement n’a pas été démarré et rien n’a été débité. Veuillez réessayer dans quelques minutes.',
    },
  },
  backToInvoice: 'Retour à la facture',
  continueTitle: 'Continuer vers le paiement',
  continueText: (provider) => `Votre page de paiement chez ${provider} est prête.`,
  continueTo: (provider) => `Continuer vers ${provider}`,
  creditNote: {
    title: 'Avoir',
    number: 'Numéro d’avoir',
    invoice: 'Facture concernée',
    date: 'Date d’émission',
    to: 'Destinataire',
    reason: 'Motif',
    reasons: {
      duplicate: 'Doublon',
      fraudulent: 'Fraude',
      order_change: 'Modification de commande',
      product_unsatisfactory: 'Produit insatisfaisant',
    },
    status: { issued: 'Émis', void: 'Annulé' },
    credited: (amount) => `Avoir de ${amount}`,
    forInvoice: (number) => `Concerne la facture ${number}`,
    amountLine: 'Crédit',
    prePayment: 'Déduit du montant dû',
    refund: 'Remboursé',
    credit: 'Crédité sur le solde du client',
    outOfBand: 'Restitué hors plateforme',
    memo: 'Note',
    problems: {
      404: {
        title: 'Avoir introuvable',
        text: 'Ce lien d’avoir n’est pas valide. Vérifiez que vous avez copié le lien complet depuis votre e-mail, ou demandez-en un nouveau à l’expéditeur.',
      },
      500: {
        title: 'Avoir indisponible',
        text: 'Cet avoir ne peut pas être affiché pour le moment. Veuillez réessayer dans quelques minutes.',
      },
    },
  },
};

const de: Messages = {
  invoice: 'Rechnung',
  invoiceNumber: 'Rechnungsnummer',
  dateOfIssue: 'Rechnungsdatum',
  dateDue: 'Fällig am',
  period: 'Zeitraum',
  currency: 'Währung',
  from: 'Von',
  billedTo: 'Rechnung an',
  taxId: 'Steuer-ID',
  labelled: (label, value) => `${label}: ${value}`,
  description: 'Beschreibung',
  quantity: 'Menge',
  unitPrice: 'Einzelpreis',
  amount: 'Betrag',
  subtotal: 'Zwischensumme',
  discount: 'Rabatt',
  tax: 'Steuer',
  total: 'Gesamt',
  creditApplied: 'Angerechnetes Guthaben',
  creditNotes: 'Gutschriften',
  amountDue: 'Fälliger Betrag',
  amountPaid: 'Bezahlt',
  amountRemaining: 'Offener Betrag',
  reverseCharge: 'Steuerschuldnerschaft des Leistungsempfängers',
  reverseChargeNote:
    'Steuerschuldnerschaft des Leistungsempfängers (Reverse Charge): Die Umsatzsteuer schuldet der Kunde.',
  status: { draft: 'Entwurf', open: 'Offen', paid: 'Bezahlt', void: 'Storniert', uncollectible: 'Uneinbringlich' },
  dueOn: (amount, date) => `${amount} fällig am ${date}`,
  paidAmount: (amount) => `${amount} bezahlt`,
  paidOn: (date) => `Bezahlt am ${date}. Vielen Dank.`,
  nothingToPay: 'Nichts zu bezahlen',
  voided: (date) => (date ? `Diese Rechnung wurde am ${date} storniert.` : 'Diese Rechnung wurde storniert.'),
  outstanding: (amount) => `${amount} offen`,
  wasDue: (date) => `War fällig am ${date}.`,
  voidNote: (business) => `Diese Rechnung wurde von ${business} storniert. Es ist keine Zahlung fällig.`,
  uncollectibleNote: (business) =>
    `Diese Rechnung ist überfällig und wurde als uneinbringlich eingestuft. Bitte wenden Sie sich an ${business}, um sie zu begleichen.`,
  draftNote: 'Dies ist ein Entwurf: Die Rechnung ist noch nicht endgültig und kann noch nicht bezahlt werden.',
  pay: (amount) => `${amount} bezahlen`,
  payWith: (provider) => `Sichere Zahlung mit ${provider}`,
  taxRate: (name, percent, inclusive) => `${name} ${percent}${inclusive ? ' (enthalten)' : ''}`,
  pageOf: (page, pages) => `Seite ${page} von ${pages}`,
  downloadPdf: 'PDF herunterladen',
  problems: {
    404: {
      title: 'Rechnung nicht gefunden',
      text: 'Dieser Rechnungslink ist ungültig. Prüfen Sie, ob Sie den vollständigen Link aus Ihrer E-Mail kopiert haben, oder bitten Sie den Absender um einen neuen.',
    },
    429: {
      title: 'Zu viele Anfragen',
      text: 'Diese Seite wurde zu oft aus Ihrem Netzwerk aufgerufen. Bitte warten Sie eine Minute und versuchen Sie es erneut.',
    },
    500: {
      title: 'Rechnung nicht verfügbar',
      text: 'Diese Rechnung kann gerade nicht angezeigt werden. Bitte versuchen Sie es in ein paar Minuten erneut.',
    },
    503: {
      title: 'Zahlung nicht gestartet',
      text: 'Der Zahlungsanbieter war nicht erreichbar, daher wurde Ihre Zahlung nicht gestartet und nichts abgebucht. Bitte versuchen Sie es in ein paar Minuten erneut.',
    },
  },
  backToInvoice: 'Zurück zur Rechnung',
  continueTitle: 'Weiter zur Zahlung',
  continueText: (provider) => `Ihre Zahlungsseite bei ${provider} ist bereit.`,
  continueTo: (provider) => `Weiter zu ${provider}`,
  creditNote: {
    title: 'Gutschrift',
    number: 'Gutschriftnummer',
    invoice: 'Betroffene Rechnung',
    date: 'Ausstellungsdatum',
    to: 'Empfänger',
    reason: 'Grund',
    reasons: {
      duplicate: 'Duplikat',
      fraudulent: 'Betrug',
      order_change: 'Bestelländerung',
      product_unsatisfactory: 'Produkt nicht zufriedenstellend',
    },
    status: { issued: 'Ausgestellt', void: 'Storniert' },
    credited: (amount) => `Gutschrift über ${amount}`,
    forInvoice: (number) => `Zu Rechnung ${number}`,
    amountLine: 'Gutschrift',
    prePayment: 'Vom fälligen Betrag abgezogen',
    refund: 'Erstattet',
    credit: 'Dem Kundenguthaben gutgeschrieben',
    outOfBand: 'Anderweitig erstattet',
    memo: 'Notiz',
    problems: {
      404: {
        title: 'Gutschrift nicht gefunden',
        text: 'Dieser Gutschriftslink ist ungültig. Prüfen Sie, ob Sie den vollständigen Link aus Ihrer E-Mail kopiert haben, oder bitten Sie den Absender um einen neuen.',
      },
      500: {
        title: 'Gutschrift nicht verfügbar',
        text: 'Diese Gutschrift kann gerade nicht angezeigt werden. Bitte versuchen Sie es in einigen Minuten erneut.',
      },
    },
  },
};

const es: Messages = {
  invoice: 'Factura',
  invoiceNumber: 'Número de factura',
  dateOfIssue: 'Fecha de emisión',
  dateDue: 'Fecha de vencimiento',
  period: 'Periodo',
  currency: 'Moneda',
  from: 'Emisor',
  billedTo: 'Facturar a',
  taxId: 'Identificación fiscal',
  labelled: (label, value) => `${label}: ${value}`,
  description: 'Descripción',
  quantity: 'Cant.',
  unitPrice: 'Precio unitario',
  amount: 'Importe',
  subtotal: 'Subtotal',
  discount: 'Descuento',
  tax: 'Impuesto',
  total: 'Total',
  creditApplied: 'Saldo aplicado',
  creditNotes: 'Notas de crédito',
  amountDue: 'Importe adeudado',
  amountPaid: 'Importe pagado',
  amountRemaining: 'Importe pendiente',
  reverseCharge: 'Inversión del sujeto pasivo',
  reverseChargeNote: 'Inversión del sujeto pasivo: el IVA lo liquida el cliente.',
  status: { draft: 'Borrador', open: 'Abierta', paid: 'Pagada', void: 'Anulada', uncollectible: 'Incobrable' },
  dueOn: (amount, date) => `${amount} a pagar antes del ${date}`,
  paidAmount: (amount) => `${amount} pagados`,
  paidOn: (date) => `Pagada el ${date}. Gracias.`,
  nothingToPay: 'Nada que pagar',
  voided: (date) => (date ? `Esta factura se anuló el ${date}.` : 'Esta factura se anuló.'),
  outstanding: (amount) => `${amount} pendientes`,
  wasDue: (date) => `Vencía el ${date}.`,
  voidNote: (business) => `${business} ha anulado esta factura. No hay ningún pago pendiente.`,
  uncollectibleNote: (business) =>
    `Esta factura está vencida y se ha marcado como incobrable. Póngase en contacto con ${business} para saldarla.`,
  draftNote: 'Esto es un borrador: la factura no es definitiva y todavía no se puede pagar.',
  pay: (amount) => `Pagar ${amount}`,
  payWith: (provider) => `Pago seguro con ${provider}`,
  taxRate: (name, percent, inclusive) => `${name} ${percent}${inclusive ? ' (incluido)' : ''}`,
  pageOf: (page, pages) => `Página ${page} de ${pages}`,
  downloadPdf: 'Descargar PDF',
  problems: {
    404: {
      title: 'Factura no encontrada',
      text: 'Este enlace de factura no es válido. Compruebe que ha copiado el enlace completo de su correo electrónico o pida uno nuevo al remitente.',
    },
    429: {
      title: 'Demasiadas solicitudes',
      text: 'Esta página se ha solicitado demasiadas veces desde su red. Espere un minuto y vuelva a intentarlo.',
    },
    500: {
      title: 'Factura no disponible',
      text: 'Esta factura no se puede mostrar en este momento. Vuelva a intentarlo dentro de unos minutos.',
    },
    503: {
      title: 'Pago no iniciado',
      text: 'No se pudo contactar con el proveedor de pagos, así que su pago no se ha iniciado y no se ha cobrado nada. Vuelva a intentarlo dentro de unos minutos.',
    },
  },
  backToInvoice: 'Volver a la factura',
  continueTitle: 'Continuar con el pago',
  continueText: (provider) => `Su página de pago en ${provider} está lista.`,
  continueTo: (provider) => `Continuar a ${provider}`,
  creditNote: {
    title: 'Nota de crédito',
    number: 'Número de nota de crédito',
    invoice: 'Factura rectificada',
    date: 'Fecha de emisión',
    to: 'Destinatario',
    reason: 'Motivo',
    reasons: {
      duplicate: 'Duplicado',
      fraudulent: 'Fraudulento',
      order_change: 'Cambio de pedido',
      product_unsatisfactory: 'Producto insatisfactorio',
    },
    status: { issued: 'Emitida', void: 'Anulada' },
    credited: (amount) => `Crédito de ${amount}`,
    forInvoice: (number) => `Corresponde a la factura ${number}`,
    amountLine: 'Crédito',
    prePayment: 'Descontado del importe adeudado',
    refund: 'Reembolsado',
    credit: 'Abonado al saldo del cliente',
    outOfBand: 'Devuelto fuera de la plataforma',
    memo: 'Nota',
    problems: {
      404: {
        title: 'Nota de crédito no encontrada',
        text: 'Este enlace de nota de crédito no es válido. Compruebe que ha copiado el enlace completo de su correo electrónico o pida uno nuevo al remitente.',
      },
      500: {
        title: 'Nota de crédito no disponible',
        text: 'Esta nota de crédito no se puede mostrar en este momento. Inténtelo de nuevo en unos minutos.',
      },
    },
  },
};

const pt: Messages = {
  invoice: 'Fatura',
  invoiceNumber: 'Número da fatura',
  dateOfIssue: 'Data de emissão',
  dateDue: 'Data de vencimento',
  period: 'Período',
  currency: 'Moeda',
  from: 'Emitente',
  billedTo: 'Faturado a',
  taxId: 'Identificação fiscal',
  labelled: (label, value) => `${label}: ${value}`,
  description: 'Descrição',
  quantity: 'Qtd.',
  unitPrice: 'Preço unitário',
  amount: 'Valor',
  subtotal: 'Subtotal',
  discount: 'Desconto',
  tax: 'Imposto',
  total: 'Total',
  creditApplied: 'Crédito aplicado',
  creditNotes: 'Notas de crédito',
  amountDue: 'Valor devido',
  amountPaid: 'Valor pago',
  amountRemaining: 'Valor em dívida',
  reverseCharge: 'Autoliquidação',
  reverseChargeNote: 'Autoliquidação: o IVA é devido pelo adquirente.',
  status: { draft: 'Rascunho', open: 'Em aberto', paid: 'Paga', void: 'Anulada', uncollectible: 'Incobrável' },
  dueOn: (amount, date) => `${amount} a pagar até ${date}`,
  paidAmount: (amount) => `${amount} pagos`,
  paidOn: (date) => `Paga em ${date}. Obrigado.`,
  nothingToPay: 'Nada a pagar',
  voided: (date) => (date ? `Esta fatura foi anulada em ${date}.` : 'Esta fatura foi anulada.'),
  outstanding: (amount) => `${amount} em dívida`,
  wasDue: (date) => `Vencia em ${date}.`,
  voidNote: (business) => `Esta fatura foi anulada por ${business}. Não há nenhum pagamento devido.`,
  uncollectibleNote: (business) =>
    `Esta fatura está em atraso e foi marcada como incobrável. Contacte ${business} para a liquidar.`,
  draftNote: 'Isto é um rascunho: a fatura não é definitiva e ainda não pode ser paga.',
  pay: (amount) => `Pagar ${amount}`,
  payWith: (provider) => `Pagamento seguro com ${provider}`,
  taxRate: (name, percent, inclusive) => `${name} ${percent}${inclusive ? ' (incluído)' : ''}`,
  pageOf: (page, pages) => `Página ${page} de ${pages}`,
  downloadPdf: 'Descarregar PDF',
  problems: {
    404: {
      title: 'Fatura não encontrada',
      text: 'Esta ligação de fatura não é válida. Verifique se copiou a ligação completa do seu e-mail ou peça uma nova ao remetente.',
    },
    429: {
      title: 'Demasiados pedidos',
      text: 'Esta página foi pedida demasiadas vezes a partir da sua rede. Aguarde um minuto e tente novamente.',
    },
    500: {
      title: 'Fatura indisponível',
      text: 'Não é possível mostrar esta fatura neste momento. Tente novamente dentro de alguns minutos.',
    },
    503: {
      title: 'Pagamento não iniciado',
      text: 'Não foi possível contactar o prestador de pagamentos, pelo que o seu pagamento não foi iniciado e nada foi cobrado. Tente novamente dentro de alguns minutos.',
    },
  },
  backToInvoice: 'Voltar à fatura',
  continueTitle: 'Continuar para o pagamento',
  continueText: (provider) => `A sua página de pagamento em ${provider} está pronta.`,
  continueTo: (provider) => `Continuar para ${provider}`,
  creditNote: {
    title: 'Nota de crédito',
    number: 'Número da nota de crédito',
    invoice: 'Fatura creditada',
    date: 'Data de emissão',
    to: 'Destinatário',
    reason: 'Motivo',
    reasons: {
      duplicate: 'Duplicado',
      fraudulent: 'Fraudulento',
      order_change: 'Alteração de encomenda',
      product_unsatisfactory: 'Produto insatisfatório',
    },
    status: { issued: 'Emitida', void: 'Anulada' },
    credited: (amount) => `Crédito de ${amount}`,
    forInvoice: (number) => `Referente à fatura ${number}`,
    amountLine: 'Crédito',
    prePayment: 'Deduzido do montante em dívida',
    refund: 'Reembolsado',
    credit: 'Creditado no saldo do cliente',
    outOfBand: 'Devolvido fora da plataforma',
    memo: 'Nota',
    problems: {
      404: {
        title: 'Nota de crédito não encontrada',
        text: 'Este link de nota de crédito não é válido. Verifique se copiou o link completo do seu e-mail ou peça um novo ao remetente.',
      },
      500: {
        title: 'Nota de crédito indisponível',
        text: 'Esta nota de crédito não pode ser exibida agora. Tente novamente em alguns minutos.',
      },
    },
  },
};

/** Every language's catalogue (SPEC §14): the words of the documents. */
export const MESSAGES: Readonly<Record<DocumentLanguage, Messages>> = { en, fr, de, es, pt };
