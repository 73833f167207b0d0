// Row shape of `tax_rates` (SPEC §14). Written only by modules/tax-rates/tax-rates.service.ts;
// `percentage_e4` and `inclusive` never change after creation (a new rate is a new row).
import type { Selectable } from 'kysely';

export interface TaxRatesTable {
  /** `txr_…`. */
  id: string;
  display_name: string;
  /**
   * The percentage in ten-thousandths of a percent, exactly: 19 % → 190000, 7.25 % →
   * 72500 (0 … 1,000,000). Text from PostgreSQL's bigint, a number from SQLite.
   */
  percentage_e4: number | string;
  /** 1/0 on SQLite, boolean on PostgreSQL: the price already contains the tax. */
  inclusive: boolean | number;
  country: string | null;
  state: string | null;
  jurisdiction: string | null;
  /** 1/0 on SQLite, boolean on PostgreSQL; false = archived: attached nowhere new. */
  active: boolean | number;
  /** JSON text of a string→string object. */
  metadata: string;
  created_at: string;
  updated_at: string;
}

export type TaxRateRow = Selectable<TaxRatesTable>;
