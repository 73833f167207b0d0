// The customer portal's words (SPEC §16), beside the documents' catalogue
// (documents.messages.ts, whose invoice status words the portal reuses): every word the
// portal's pages print, in each of DOCUMENT_LANGUAGES. A sentence with a value is a function
// of the value, already formatted (money, dates: documents.format.ts). tsc fails until every
// language has every message.
import type { DocumentLanguage } from '../../shared/locales.ts';
import type { SubscriptionStatus } from '../../db/tables/subscriptions.table.ts';

/** One language's portal words. */
export interface PortalMessages {
  title: string;
  /** Whose portal this is (the customer's name or email, isolated by the template). */
  signedInAs: string;
  back: string;
  invoices: string;
  noInvoices: string;
  number: string;
  date: string;
  total: string;
  remaining: string;
  status: string;
  view: string;
  pdf: string;
  pay: string;
  subscriptions: string;
  noSubscriptions: string;
  plan: string;
  subscriptionStatus: Record<SubscriptionStatus, string>;
  renewsOn: (date: string) => string;
  endsOn: (date: string) => string;
  cancelAtPeriodEnd: string;
  switchTo: string;
  previewChange: string;
  /** The preview page's heading and its words. */
  changeTitle: string;
  changeFromTo: (from: string, to: string) => string;
  changeNow: (amount: string) => string;
  changeNext: (amount: string, date: string) => string;
  changeScheduled: (date: string) => string;
  description: string;
  amount: string;
  confirmChange: string;
  keepPlan: string;
  paymentMethods: string;
  noPaymentMethods: string;
  savedWhenPaying: string;
  addMethod: string;
  expires: (month: string, year: string) => string;
  isDefault: string;
  makeDefault: string;
  remove: string;
  /** The footer: when this browser session ends (a formatted date and UTC time). */
  sessionEnds: (when: string) => string;
  /** What an action did, shown once on the next page. */
  done: Record<PortalNotice, string>;
  problems: Record<PortalProblem, { title: string; text: string }>;
}

/** The notices of the overview page after an action (`?done=…`). */
export const PORTAL_NOTICES = ['cancelled', 'changed', 'scheduled', 'removed', 'default'] as const;
export type PortalNotice = (typeof PORTAL_NOTICES)[number];

/** Why a portal page cannot be shown: expired session, unknown link or page, stale form, a refused action, 429, 500. */
export type PortalProblem = 'expired' | 'unknown' | 'stale' | 'refused' | 429 | 500;

const en: PortalMessages = {
  title: 'Billing',
  signedInAs: 'Signed in as',
  back: 'Back',
  invoices: 'Invoices',
  noInvoices: 'No invoices yet.',
  number: 'Number',
  date: 'Date',
  total: 'Total',
  remaining: 'Remaining',
  status: 'Status',
  view: 'View',
  pdf: 'PDF',
  pay: 'Pay',
  subscriptions: 'Subscriptions',
  noSubscriptions: 'No subscriptions.',
  plan: 'Plan',
  subscriptionStatus: {
    incomplete: 'Incomplete',
    incomplete_expired: 'Expired',
    trialing: 'Trial',
    active: 'Active',
    past_due: 'Past due',
    unpaid: 'Unpaid',
    paused: 'Paused',
    cancelled: 'Cancelled',
  },
  renewsOn: (date) => `Renews on ${date}`,
  endsOn: (date) => `Ends on ${date}`,
  cancelAtPeriodEnd: 'Cancel at period end',
  switchTo: 'Switch to',
  previewChange: 'Preview change',
  changeTitle: 'Change plan',
  changeFromTo: (from, to) => `From ${from} to ${to}`,
  changeNow: (amount) => `Due now: ${amount}`,
  changeNext: (amount, date) => `Next invoice: ${amount} on ${date}`,
  changeScheduled: (date) => `The change takes effect on ${date}.`,
  description: 'Description',
  amount: 'Amount',
  confirmChange: 'Confirm change',
  keepPlan: 'Keep my plan',
  paymentMethods: 'Payment methods',
  noPaymentMethods: 'No saved payment methods.',
  savedWhenPaying: 'A card you pay an invoice with is saved here.',
  addMethod: 'Add a payment method',
  expires: (month, year) => `Expires ${month}/${year}`,
  isDefault: 'Default',
  makeDefault: 'Make default',
  remove: 'Remove',
  sessionEnds: (when) => `This session ends on ${when}.`,
  done: {
    cancelled: 'Your subscription will end at the end of the current period.',
    changed: 'Your plan was changed.',
    scheduled: 'Your plan change is scheduled.',
    removed: 'The payment method was removed.',
    default: 'The default payment method was changed.',
  },
  problems: {
    expired: { title: 'This link has expired', text: 'Portal links are valid for one hour. Ask for a new one.' },
    unknown: { title: 'Page not found', text: 'This link is not valid. Ask for a new one.' },
    stale: { title: 'Please try again', text: 'This form is out of date. Go back to the portal and try again.' },
    refused: {
      title: 'That cannot be done now',
      text: 'Nothing was changed. Go back to the portal to see where things stand.',
    },
    429: { title: 'Too many requests', text: 'Please wait a moment and try again.' },
    500: { title: 'Something went wrong', text: 'Please try again later.' },
  },
};

const fr: PortalMessages = {
  title: 'Facturation',
  signedInAs: 'Connecté en tant que',
  back: 'Retour',
  invoices: 'Factures',
  noInvoices: 'Aucune facture pour le moment.',
  number: 'Numéro',
  date: 'Date',
  total: 'Total',
  remaining: 'Reste à payer',
  status: 'Statut',
  view: 'Voir',
  pdf: 'PDF',
  pay: 'Payer',
  subscriptions: 'Abonnements',
  noSubscriptions: 'Aucun abonnement.',
  plan: 'Formule',
  subscriptionStatus: {
    incomplete: 'Incomplet',
    incomplete_expired: 'Expiré',
    trialing: 'Essai',
    active: 'Actif',
    past_due: 'En retard',
    unpaid: 'Impayé',
    paused: 'En pause',
    cancelled: 'Résilié',
  },
  renewsOn: (date) => `Renouvellement le ${date}`,
  endsOn: (date) => `Prend fin le ${date}`,
  cancelAtPeriodEnd: 'Résilier en fin de période',
  switchTo: 'Passer à',
  previewChange: 'Voir le changement',
  changeTitle: 'Changer de formule',
  changeFromTo: (from, to) => `De ${from} à ${to}`,
  changeNow: (amount) => `À payer maintenant : ${amount}`,
  changeNext: (amount, date) => `Prochaine facture : ${amount} le ${date}`,
  changeScheduled: (date) => `Le changement prend effet le ${date}.`,
  description: 'Description',
  amount: 'Montant',
  confirmChange: 'Confirmer le changement',
  keepPlan: 'Garder ma formule',
  paymentMethods: 'Moyens de paiement',
  noPaymentMethods: 'Aucun moyen de paiement enregistré.',
  savedWhenPaying: 'La carte avec laquelle vous payez une facture est enregistrée ici.',
  addMethod: 'Ajouter un moyen de paiement',
  expires: (month, year) => `Expire ${month}/${year}`,
  isDefault: 'Par défaut',
  makeDefault: 'Utiliser par défaut',
  remove: 'Supprimer',
  sessionEnds: (when) => `Cette session prend fin le ${when}.`,
  done: {
    cancelled: 'Votre abonnement prendra fin à la fin de la période en cours.',
    changed: 'Votre formule a été changée.',
    scheduled: 'Le changement de formule est programmé.',
    removed: 'Le moyen de paiement a été supprimé.',
    default: 'Le moyen de paiement par défaut a été changé.',
  },
  problems: {
    expired: {
      title: 'Ce lien a expiré',
      text: 'Les liens du portail sont valables une heure. Demandez-en un nouveau.',
    },
    unknown: { title: 'Page introuvable', text: "Ce lien n'est pas valable. Demandez-en un nouveau." },
    stale: { title: 'Veuillez réessayer', text: "Ce formulaire n'est plus à jour. Revenez au portail et réessayez." },
    refused: {
      title: 'Impossible pour le moment',
      text: "Rien n'a été modifié. Revenez au portail pour voir où en sont les choses.",
    },
    429: { title: 'Trop de requêtes', text: 'Veuillez patienter un instant et réessayer.' },
    500: { title: 'Une erreur est survenue', text: 'Veuillez réessayer plus tard.' },
  },
};

const de: PortalMessages = {
  title: 'Abrechnung',
  signedInAs: 'Angemeldet als',
  back: 'Zurück',
  invoices: 'Rechnungen',
  noInvoices: 'Noch keine Rechnungen.',
  number: 'Nummer',
  date: 'Datum',
  total: 'Gesamt',
  remaining: 'Offen',
  status: 'Status',
  view: 'Ansehen',
  pdf: 'PDF',
  pay: 'Bezahlen',
  subscriptions: 'Abonnements',
  noSubscriptions: 'Keine Abonnements.',
  plan: 'Tarif',
  subscriptionStatus: {
    incomplete: 'Unvollständig',
    incomplete_expired: 'Abgelaufen',
    trialing: 'Testphase',
    active: 'Aktiv',
    past_due: 'Überfällig',
    unpaid: 'Unbezahlt',
    paused: 'Pausiert',
    cancelled: 'Gekündigt',
  },
  renewsOn: (date) => `Verlängert sich am ${date}`,
  endsOn: (date) => `Endet am ${date}`,
  cancelAtPeriodEnd: 'Zum Periodenende kündigen',
  switchTo: 'Wechseln zu',
  previewChange: 'Änderung ansehen',
  changeTitle: 'Tarif wechseln',
  changeFromTo: (from, to) => `Von ${from} zu ${to}`,
  changeNow: (amount) => `Jetzt fällig: ${amount}`,
  changeNext: (amount, date) => `Nächste Rechnung: ${amount} am ${date}`,
  changeScheduled: (date) => `Die Änderung gilt ab ${date}.`,
  description: 'Beschreibung',
  amount: 'Betrag',
  confirmChange: 'Änderung bestätigen',
  keepPlan: 'Tarif behalten',
  paymentMethods: 'Zahlungsmethoden',
  noPaymentMethods: 'Keine gespeicherten Zahlungsmethoden.',
  savedWhenPaying: 'Eine Karte, mit der Sie eine Rechnung bezahlen, wird hier gespeichert.',
  addMethod: 'Zahlungsmethode hinzufügen',
  expires: (month, year) => `Gültig bis ${month}/${year}`,
  isDefault: 'Standard',
  makeDefault: 'Als Standard festlegen',
  remove: 'Entfernen',
  sessionEnds: (when) => `Diese Sitzung endet am ${when}.`,
  done: {
    cancelled: 'Ihr Abonnement endet mit Ablauf der aktuellen Periode.',
    changed: 'Ihr Tarif wurde gewechselt.',
    scheduled: 'Ihr Tarifwechsel ist geplant.',
    removed: 'Die Zahlungsmethode wurde entfernt.',
    default: 'Die Standard-Zahlungsmethode wurde geändert.',
  },
  problems: {
    expired: {
      title: 'Dieser Link ist abgelaufen',
      text: 'Portal-Links gelten eine Stunde. Fordern Sie einen neuen an.',
    },
    unknown: { title: 'Seite nicht gefunden', text: 'Dieser Link ist ungültig. Fordern Sie einen neuen an.' },
    stale: {
      title: 'Bitte erneut versuchen',
      text: 'Dieses Formular ist veraltet. Gehen Sie zurück zum Portal und versuchen Sie es erneut.',
    },
    refused: {
      title: 'Das ist gerade nicht möglich',
      text: 'Es wurde nichts geändert. Im Portal sehen Sie den aktuellen Stand.',
    },
    429: { title: 'Zu viele Anfragen', text: 'Bitte warten Sie einen Moment und versuchen Sie es erneut.' },
    500: { title: 'Etwas ist schiefgelaufen', text: 'Bitte versuchen Sie es später erneut.' },
  },
};

const es: PortalMessages = {
  title: 'Facturación',
  signedInAs: 'Sesión de',
  back: 'Volver',
  invoices: 'Facturas',
  noInvoices: 'Todavía no hay facturas.',
  number: 'Número',
  date: 'Fecha',
  total: 'Total',
  remaining: 'Pendiente',
  status: 'Estado',
  view: 'Ver',
  pdf: 'PDF',
  pay: 'Pagar',
  subscriptions: 'Suscripciones',
  noSubscriptions: 'No hay suscripciones.',
  plan: 'Plan',
  subscriptionStatus: {
    incomplete: 'Incompleta',
    incomplete_expired: 'Caducada',
    trialing: 'Prueba',
    active: 'Activa',
    past_due: 'Vencida',
    unpaid: 'Impagada',
    paused: 'En pausa',
    cancelled: 'Cancelada',
  },
  renewsOn: (date) => `Se renueva el ${date}`,
  endsOn: (date) => `Termina el ${date}`,
  cancelAtPeriodEnd: 'Cancelar al final del periodo',
  switchTo: 'Cambiar a',
  previewChange: 'Ver el cambio',
  changeTitle: 'Cambiar de plan',
  changeFromTo: (from, to) => `De ${from} a ${to}`,
  changeNow: (amount) => `A pagar ahora: ${amount}`,
  changeNext: (amount, date) => `Próxima factura: ${amount} el ${date}`,
  changeScheduled: (date) => `El cambio se aplica el ${date}.`,
  description: 'Descripción',
  amount: 'Importe',
  confirmChange: 'Confirmar el cambio',
  keepPlan: 'Mantener mi plan',
  paymentMethods: 'Métodos de pago',
  noPaymentMethods: 'No hay métodos de pago guardados.',
  savedWhenPaying: 'La tarjeta con la que paga una factura se guarda aquí.',
  addMethod: 'Añadir un método de pago',
  expires: (month, year) => `Caduca ${month}/${year}`,
  isDefault: 'Predeterminado',
  makeDefault: 'Usar como predeterminado',
  remove: 'Eliminar',
  sessionEnds: (when) => `Esta sesión termina el ${when}.`,
  done: {
    cancelled: 'Su suscripción terminará al final del periodo actual.',
    changed: 'Su plan se ha cambiado.',
    scheduled: 'El cambio de plan está programado.',
    removed: 'El método de pago se ha eliminado.',
    default: 'El método de pago predeterminado se ha cambiado.',
  },
  problems: {
    expired: { title: 'Este enlace ha caducado', text: 'Los enlaces del portal son válidos una hora. Pida uno nuevo.' },
    unknown: { title: 'Página no encontrada', text: 'Este enlace no es válido. Pida uno nuevo.' },
    stale: {
      title: 'Inténtelo de nuevo',
      text: 'Este formulario está desactualizado. Vuelva al portal e inténtelo de nuevo.',
    },
    refused: { title: 'No es posible ahora', text: 'No se ha cambiado nada. Vuelva al portal para ver la situación.' },
    429: { title: 'Demasiadas solicitudes', text: 'Espere un momento y vuelva a intentarlo.' },
    500: { title: 'Algo ha fallado', text: 'Vuelva a intentarlo más tarde.' },
  },
};

const pt: PortalMessages = {
  title: 'Faturação',
  signedInAs: 'Sessão de',
  back: 'Voltar',
  invoices: 'Faturas',
  noInvoices: 'Ainda não há faturas.',
  number: 'Número',
  date: 'Data',
  total: 'Total',
  remaining: 'Em dívida',
  status: 'Estado',
  view: 'Ver',
  pdf: 'PDF',
  pay: 'Pagar',
  subscriptions: 'Subscrições',
  noSubscriptions: 'Não há subscrições.',
  plan: 'Plano',
  subscriptionStatus: {
    incomplete: 'Incompleta',
    incomplete_expired: 'Expirada',
    trialing: 'Período experimental',
    active: 'Ativa',
    past_due: 'Em atraso',
    unpaid: 'Por pagar',
    paused: 'Em pausa',
    cancelled: 'Cancelada',
  },
  renewsOn: (date) => `Renova a ${date}`,
  endsOn: (date) => `Termina a ${date}`,
  cancelAtPeriodEnd: 'Cancelar no fim do período',
  switchTo: 'Mudar para',
  previewChange: 'Ver a alteração',
  changeTitle: 'Mudar de plano',
  changeFromTo: (from, to) => `De ${from} para ${to}`,
  changeNow: (amount) => `A pagar agora: ${amount}`,
  changeNext: (amount, date) => `Próxima fatura: ${amount} a ${date}`,
  changeScheduled: (date) => `A alteração aplica-se a ${date}.`,
  description: 'Descrição',
  amount: 'Montante',
  confirmChange: 'Confirmar a alteração',
  keepPlan: 'Manter o meu plano',
  paymentMethods: 'Meios de pagamento',
  noPaymentMethods: 'Não há meios de pagamento guardados.',
  savedWhenPaying: 'O cartão com que paga uma fatura fica guardado aqui.',
  addMethod: 'Adicionar um método de pagamento',
  expires: (month, year) => `Expira ${month}/${year}`,
  isDefault: 'Predefinido',
  makeDefault: 'Tornar predefinido',
  remove: 'Remover',
  sessionEnds: (when) => `Esta sessão termina a ${when}.`,
  done: {
    cancelled: 'A sua subscrição termina no fim do período atual.',
    changed: 'O seu plano foi alterado.',
    scheduled: 'A alteração de plano está agendada.',
    removed: 'O meio de pagamento foi removido.',
    default: 'O meio de pagamento predefinido foi alterado.',
  },
  problems: {
    expired: {
      title: 'Esta ligação expirou',
      text: 'As ligações do portal são válidas durante uma hora. Peça uma nova.',
    },
    unknown: { title: 'Página não encontrada', text: 'Esta ligação não é válida. Peça uma nova.' },
    stale: { title: 'Tente novamente', text: 'Este formulário está desatualizado. Volte ao portal e tente novamente.' },
    refused: { title: 'Não é possível agora', text: 'Nada foi alterado. Volte ao portal para ver a situação.' },
    429: { title: 'Demasiados pedidos', text: 'Aguarde um momento e tente novamente.' },
    500: { title: 'Algo correu mal', text: 'Tente novamente mais tarde.' },
  },
};

/** Every language's portal words (SPEC §16). */
export const PORTAL_MESSAGES: Readonly<Record<DocumentLanguage, PortalMessages>> = { en, fr, de, es, pt };
