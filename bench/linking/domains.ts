/**
 * The held-out warehouse behind the schema-linking benchmark: 12 business domains, one schema
 * each, ~120 real tables with terse names (`so_hdr`, `vnd`, `shp`) whose comments carry the words
 * business users say ("clients", "suppliers", "late deliveries", "revenue"), declared foreign
 * keys (within and across domains), the questions users ask with the tables that answer them,
 * and the semantic layer's synonyms for some entities.
 *
 * A column is written `name type [pk] [nn] [>schema.table] [# comment]`: `pk` makes it (part of)
 * the primary key, `>schema.table` a foreign key to that table's one-column primary key.
 */

export interface DomainTable {
  schema: string;
  name: string;
  comment: string;
  rows: number;
  columns: string[];
}

const T = (schema: string, name: string, rows: number, comment: string, columns: string[]): DomainTable => ({ schema, name, comment, rows, columns });

export const DOMAIN_TABLES: readonly DomainTable[] = [
  // ---- sales --------------------------------------------------------------------------------
  T('sales', 'cust', 48_000, 'Customers (clients, accounts) who buy from us', [
    'cust_id integer pk', 'cust_nm text nn # Customer (client) legal name', 'seg_cd text # Segment: RETAIL, WHOLESALE, ENTERPRISE',
    'rgn_cd text >sales.rgn # Sales region', 'ctry_cd char(2) # ISO country code', 'city text', 'crt_dt date # Date the customer was onboarded',
    'acct_mgr_id integer >hr.emp # Account manager (employee)', 'credit_lmt numeric(12,2) # Credit limit', 'actv_flg boolean',
  ]),
  T('sales', 'rgn', 6, 'Sales regions (territories)', [
    'rgn_cd text pk', 'rgn_nm text nn # EMEA, APAC, AMER, LATAM', 'hq_city text',
  ]),
  T('sales', 'so_hdr', 2_400_000, 'Sales orders (order header): one row per customer order; tot_amt is the gross revenue', [
    'so_id bigint pk', 'cust_id integer nn >sales.cust', 'ord_dt date nn # Order date', 'ch_cd text # Sales channel: WEB, STORE, PHONE, PARTNER',
    'stat_cd text # Order status: OPEN, SHIPPED, CANCELLED, RETURNED', 'rep_id integer >sales.rep # Sales rep credited',
    'partner_id integer >crm.partner # Reseller when sold through a channel partner', 'curr_cd char(3)',
    'tot_amt numeric(14,2) # Order total incl. tax (gross revenue)', 'disc_amt numeric(12,2) # Discount given', 'tax_amt numeric(12,2)',
  ]),
  T('sales', 'so_ln', 9_100_000, 'Order lines: the items (products) of each sales order, with quantity and net amount', [
    'so_id bigint pk >sales.so_hdr', 'ln_no integer pk', 'prd_id integer nn >inventory.prd', 'qty integer # Units sold',
    'unit_prc numeric(12,2) # Unit selling price', 'ln_amt numeric(14,2) # Line revenue (net of discount)',
  ]),
  T('sales', 'rep', 240, 'Sales representatives (salespeople, account executives)', [
    'rep_id integer pk', 'rep_nm text # Full name', 'emp_id integer >hr.emp', 'rgn_cd text >sales.rgn', 'quota_amt numeric(14,2) # Annual sales quota', 'actv_flg boolean',
  ]),
  T('sales', 'quota', 3_800, 'Sales targets (quotas) per rep per fiscal quarter', [
    'rep_id integer pk >sales.rep', 'fy integer pk # Fiscal year', 'qtr integer pk # Quarter 1-4', 'tgt_amt numeric(14,2) # Target revenue',
  ]),
  T('sales', 'promo_cd', 1_200, 'Discount codes (coupons, vouchers) customers redeem on orders', [
    'promo_id integer pk', 'code text nn # The code typed at checkout, e.g. SPRING20', 'pct_off numeric(5,2)', 'start_dt date', 'end_dt date',
    'cmp_id integer >marketing.cmp # Campaign that issued it',
  ]),
  T('sales', 'so_promo', 310_000, 'Codes applied to orders', [
    'so_id bigint pk >sales.so_hdr', 'promo_id integer pk >sales.promo_cd',
  ]),
  T('sales', 'rtn', 95_000, 'Returns (RMAs): products sent back by customers and the refund paid', [
    'rtn_id integer pk', 'so_id bigint >sales.so_hdr', 'prd_id integer >inventory.prd', 'rtn_dt date', 'rtn_qty integer',
    'rsn_cd text # Return reason: DAMAGED, WRONG_ITEM, NOT_NEEDED, LATE', 'refund_amt numeric(12,2)',
  ]),
  T('sales', 'prc_lst', 64_000, 'Price list: list price of each product from an effective date', [
    'prd_id integer pk >inventory.prd', 'eff_dt date pk', 'list_prc numeric(12,2)', 'curr_cd char(3)',
  ]),

  // ---- inventory ----------------------------------------------------------------------------
  T('inventory', 'prd', 21_000, 'Products (items, SKUs, merchandise) we sell or make', [
    'prd_id integer pk', 'sku text nn # Stock keeping unit, e.g. SKU-1042', 'prd_nm text', 'cat_id integer >inventory.cat', 'brand text',
    'unit_cost numeric(12,2) # Standard unit cost (for margin)', 'disc_flg boolean # Discontinued', 'uom text',
  ]),
  T('inventory', 'cat', 340, 'Product categories (hierarchy)', [
    'cat_id integer pk', 'cat_nm text nn', 'parent_cat_id integer >inventory.cat',
  ]),
  T('inventory', 'wh', 38, 'Warehouses (distribution centers, DCs, depots)', [
    'wh_id integer pk', 'wh_nm text # e.g. Dallas DC', 'city text', 'ctry_cd char(2)', 'rgn_cd text >sales.rgn',
  ]),
  T('inventory', 'stk_lvl', 14_000_000, 'Stock on hand (inventory levels) per product per warehouse, one snapshot per day', [
    'wh_id integer pk >inventory.wh', 'prd_id integer pk >inventory.prd', 'snap_dt date pk', 'on_hand_qty integer', 'reserved_qty integer',
  ]),
  T('inventory', 'stk_mv', 31_000_000, 'Stock movements: receipts, picks, transfers and adjustments', [
    'mv_id bigint pk', 'wh_id integer >inventory.wh', 'prd_id integer >inventory.prd', 'mv_ts timestamp', 'mv_typ text # RECEIPT, PICK, TRANSFER, ADJUSTMENT', 'qty integer',
  ]),
  T('inventory', 'reorder_pt', 180_000, 'Reorder points: minimum and maximum stock per product per warehouse', [
    'wh_id integer pk >inventory.wh', 'prd_id integer pk >inventory.prd', 'min_qty integer', 'max_qty integer',
  ]),
  T('inventory', 'bin_loc', 52_000, 'Bin locations (aisle, shelf) inside warehouses', [
    'bin_id integer pk', 'wh_id integer >inventory.wh', 'aisle text', 'shelf text',
  ]),
  T('inventory', 'cyc_cnt', 880_000, 'Cycle counts (stock takes, physical inventory counts) against the system quantity', [
    'cnt_id integer pk', 'wh_id integer >inventory.wh', 'prd_id integer >inventory.prd', 'cnt_dt date', 'counted_qty integer', 'sys_qty integer # Quantity the system expected',
  ]),
  T('inventory', 'lot', 410_000, 'Lots (batches) of a product with manufacture and expiry dates', [
    'lot_id integer pk', 'prd_id integer >inventory.prd', 'mfg_dt date', 'exp_dt date # Expiry date',
  ]),
  T('inventory', 'xfer', 260_000, 'Transfers of stock between warehouses', [
    'xfer_id integer pk', 'from_wh_id integer >inventory.wh', 'to_wh_id integer >inventory.wh', 'prd_id integer >inventory.prd', 'qty integer', 'ship_dt date', 'rcv_dt date',
  ]),

  // ---- shipping -----------------------------------------------------------------------------
  T('shipping', 'shp', 2_100_000, 'Shipments (deliveries) sent to customers; late when dlv_dt is after promised_dt', [
    'shp_id bigint pk', 'so_id bigint >sales.so_hdr', 'wh_id integer >inventory.wh # Shipped from', 'carr_id integer >shipping.carr',
    'svc_lvl_cd text >shipping.svc_lvl', 'addr_id integer >shipping.addr # Delivered to', 'ship_dt date', 'promised_dt date # Promised delivery date',
    'dlv_dt date # Actual delivery date', 'stat_cd text # IN_TRANSIT, DELIVERED, LOST, RETURNED', 'frt_cost numeric(10,2) # Freight cost',
  ]),
  T('shipping', 'carr', 14, 'Carriers (shipping companies, couriers) such as UPS, FedEx, DHL', [
    'carr_id integer pk', 'carr_nm text nn', 'scac text # Standard carrier code',
  ]),
  T('shipping', 'svc_lvl', 6, 'Shipping service levels (ground, express, overnight) and their target transit days', [
    'svc_lvl_cd text pk', 'descr text', 'tgt_days integer',
  ]),
  T('shipping', 'shp_pkg', 3_300_000, 'Packages (parcels, boxes) in each shipment, with tracking numbers', [
    'pkg_id bigint pk', 'shp_id bigint >shipping.shp', 'wt_kg numeric(8,2)', 'trk_no text # Carrier tracking number',
  ]),
  T('shipping', 'trk_evt', 19_000_000, 'Tracking events (scans) of packages along the way', [
    'evt_id bigint pk', 'pkg_id bigint >shipping.shp_pkg', 'evt_ts timestamp', 'evt_cd text # PICKED_UP, IN_TRANSIT, OUT_FOR_DELIVERY, DELIVERED', 'loc text',
  ]),
  T('shipping', 'rt', 4_200, 'Routes (lanes) from a warehouse to a destination area by a carrier', [
    'rt_id integer pk', 'orig_wh_id integer >inventory.wh', 'dest_zip text', 'carr_id integer >shipping.carr',
  ]),
  T('shipping', 'frt_inv', 9_000, 'Freight invoices: bills from carriers', [
    'frt_inv_id integer pk', 'carr_id integer >shipping.carr', 'inv_dt date', 'amt numeric(12,2)',
  ]),
  T('shipping', 'frt_inv_ln', 2_000_000, 'Freight invoice lines, one per shipment billed', [
    'frt_inv_id integer pk >shipping.frt_inv', 'shp_id bigint pk >shipping.shp', 'amt numeric(10,2)',
  ]),
  T('shipping', 'dlv_exc', 140_000, 'Delivery exceptions: delays, damage, failed attempts', [
    'exc_id integer pk', 'shp_id bigint >shipping.shp', 'exc_cd text # DELAY, DAMAGED, ADDRESS, REFUSED', 'exc_ts timestamp',
  ]),
  T('shipping', 'addr', 120_000, 'Ship-to addresses of customers', [
    'addr_id integer pk', 'cust_id integer >sales.cust', 'line1 text', 'city text', 'zip text', 'ctry_cd char(2)',
  ]),

  // ---- hr -----------------------------------------------------------------------------------
  T('hr', 'emp', 6_400, 'Employees (staff, workers, headcount); attrition when term_dt is set', [
    'emp_id integer pk', 'first_nm text', 'last_nm text', 'dept_id integer >hr.dept', 'job_id integer >hr.job', 'mgr_id integer >hr.emp # Manager',
    'loc_id integer >hr.loc # Office', 'hire_dt date', 'term_dt date # Termination date', 'stat_cd text # ACTIVE, LEAVE, TERMINATED',
  ]),
  T('hr', 'dept', 90, 'Departments (org units, teams)', [
    'dept_id integer pk', 'dept_nm text nn', 'cc_id integer >finance.cc # Cost center',
  ]),
  T('hr', 'job', 310, 'Job titles (positions) with pay grade and salary band', [
    'job_id integer pk', 'title text nn', 'grade text', 'min_sal numeric(12,2)', 'max_sal numeric(12,2)',
  ]),
  T('hr', 'comp', 41_000, 'Compensation history: salary (pay) and bonus of employees from an effective date', [
    'emp_id integer pk >hr.emp', 'eff_dt date pk', 'base_sal numeric(12,2) # Annual base salary', 'bonus_pct numeric(5,2)', 'curr_cd char(3)',
  ]),
  T('hr', 'loc', 24, 'Office locations (sites)', [
    'loc_id integer pk', 'city text # e.g. Berlin, Austin', 'ctry_cd char(2)',
  ]),
  T('hr', 'lv_req', 88_000, 'Leave requests: vacation, PTO, sick leave, time off', [
    'lv_id integer pk', 'emp_id integer >hr.emp', 'lv_typ text # VACATION, SICK, PARENTAL, UNPAID', 'start_dt date', 'end_dt date', 'days numeric(5,1)', 'stat_cd text',
  ]),
  T('hr', 'perf_rv', 30_000, 'Performance reviews (appraisals) with a rating from 1 to 5', [
    'rv_id integer pk', 'emp_id integer >hr.emp', 'rv_yr integer', 'rating integer', 'reviewer_id integer >hr.emp',
  ]),
  T('hr', 'trn_crs', 160, 'Training courses', [
    'crs_id integer pk', 'crs_nm text # e.g. Data Privacy Basics', 'hrs numeric(5,1)',
  ]),
  T('hr', 'trn_enr', 52_000, 'Training enrolments and completions of employees', [
    'emp_id integer pk >hr.emp', 'crs_id integer pk >hr.trn_crs', 'cmpl_dt date # Completion date', 'score integer',
  ]),
  T('hr', 'req', 2_900, 'Job openings (requisitions, vacancies) and when they were filled', [
    'req_id integer pk', 'job_id integer >hr.job', 'dept_id integer >hr.dept', 'open_dt date', 'fill_dt date', 'stat_cd text',
  ]),
  T('hr', 'appl', 71_000, 'Job applicants (candidates) and their applications', [
    'appl_id integer pk', 'req_id integer >hr.req', 'cand_nm text', 'appl_dt date', 'stage_cd text # SCREEN, INTERVIEW, OFFER, HIRED, REJECTED',
    'src_cd text # Source: REFERRAL, AGENCY, JOB_BOARD',
  ]),

  // ---- finance ------------------------------------------------------------------------------
  T('finance', 'gl_acct', 1_100, 'Chart of accounts: general ledger accounts', [
    'acct_no text pk', 'acct_nm text', 'acct_typ text # ASSET, LIABILITY, EQUITY, REVENUE, EXPENSE',
  ]),
  T('finance', 'gl_je', 900_000, 'Journal entries (ledger postings), header', [
    'je_id bigint pk', 'post_dt date', 'fp_id integer >finance.fin_per # Fiscal period', 'src_cd text', 'descr text',
  ]),
  T('finance', 'gl_je_ln', 6_800_000, 'Journal entry lines: debit and credit amounts per account and cost center', [
    'je_id bigint pk >finance.gl_je', 'ln_no integer pk', 'acct_no text >finance.gl_acct', 'cc_id integer >finance.cc', 'dr_amt numeric(14,2) # Debit', 'cr_amt numeric(14,2) # Credit',
  ]),
  T('finance', 'cc', 420, 'Cost centers', [
    'cc_id integer pk', 'cc_nm text # e.g. Marketing EMEA', 'owner_emp_id integer >hr.emp',
  ]),
  T('finance', 'fin_per', 180, 'Fiscal periods (fiscal months, quarters and years) and whether they are closed', [
    'fp_id integer pk', 'fy integer', 'fq integer', 'fm integer', 'start_dt date', 'end_dt date', 'closed_flg boolean',
  ]),
  T('finance', 'bud', 560_000, 'Budgets per cost center, account and fiscal period (planned spend)', [
    'cc_id integer pk >finance.cc', 'acct_no text pk >finance.gl_acct', 'fp_id integer pk >finance.fin_per', 'bud_amt numeric(14,2)',
  ]),
  T('finance', 'fx_rt', 88_000, 'Currency exchange rates to USD per day', [
    'curr_cd char(3) pk # e.g. EUR', 'rt_dt date pk', 'usd_rt numeric(12,6)',
  ]),
  T('finance', 'exp_rpt', 160_000, 'Expense reports (reimbursements, T&E) submitted by employees', [
    'exp_id integer pk', 'emp_id integer >hr.emp', 'sub_dt date', 'tot_amt numeric(12,2)', 'stat_cd text # SUBMITTED, APPROVED, PAID, REJECTED',
  ]),
  T('finance', 'exp_ln', 720_000, 'Expense lines by category (travel, meals, lodging)', [
    'exp_id integer pk >finance.exp_rpt', 'ln_no integer pk', 'exp_cat text # TRAVEL, MEALS, LODGING, SUPPLIES', 'amt numeric(12,2)', 'merchant text',
  ]),
  T('finance', 'fa_asset', 12_000, 'Fixed assets (equipment, vehicles) with cost and useful life for depreciation', [
    'asset_id integer pk', 'descr text', 'acq_dt date # Acquisition (purchase) date', 'cost numeric(14,2)', 'useful_life_yrs integer', 'cc_id integer >finance.cc',
  ]),

  // ---- billing ------------------------------------------------------------------------------
  T('billing', 'inv', 2_300_000, 'Customer invoices (bills) issued; overdue when unpaid after due_dt', [
    'inv_id bigint pk', 'cust_id integer >sales.cust', 'so_id bigint >sales.so_hdr', 'inv_dt date', 'due_dt date', 'amt numeric(14,2)',
    'stat_cd text # OPEN, PAID, OVERDUE, VOID', 'curr_cd char(3)',
  ]),
  T('billing', 'inv_ln', 8_700_000, 'Invoice lines', [
    'inv_id bigint pk >billing.inv', 'ln_no integer pk', 'prd_id integer >inventory.prd', 'qty integer', 'amt numeric(14,2)', 'tax_amt numeric(12,2)',
  ]),
  T('billing', 'pmt', 2_000_000, 'Payments received from customers (receipts, cash collected)', [
    'pmt_id bigint pk', 'cust_id integer >sales.cust', 'pmt_dt date', 'amt numeric(14,2)', 'mthd_cd text # CARD, WIRE, ACH, CHECK',
  ]),
  T('billing', 'pmt_alloc', 2_200_000, 'Which payment settled which invoice, and how much of it', [
    'pmt_id bigint pk >billing.pmt', 'inv_id bigint pk >billing.inv', 'amt numeric(14,2)',
  ]),
  T('billing', 'cr_memo', 60_000, 'Credit notes (credit memos, refunds) issued to customers', [
    'cm_id integer pk', 'inv_id bigint >billing.inv', 'cust_id integer >sales.cust', 'cm_dt date', 'amt numeric(12,2)', 'rsn text',
  ]),
  T('billing', 'sub', 35_000, 'Subscriptions (recurring contracts) with monthly recurring revenue; churned when ended', [
    'sub_id integer pk', 'cust_id integer >sales.cust', 'plan_id integer >billing.plan', 'start_dt date', 'end_dt date',
    'mrr numeric(12,2) # Monthly recurring revenue', 'stat_cd text # ACTIVE, CHURNED, PAUSED',
  ]),
  T('billing', 'plan', 18, 'Subscription plans (pricing tiers)', [
    'plan_id integer pk', 'plan_nm text # Basic, Pro, Enterprise', 'mo_prc numeric(10,2)',
  ]),
  T('billing', 'dunning', 210_000, 'Dunning: payment reminders sent for overdue invoices (collections)', [
    'dun_id integer pk', 'inv_id bigint >billing.inv', 'sent_dt date', 'lvl integer # Reminder level 1-3',
  ]),
  T('billing', 'tax_rt', 3_400, 'Sales tax and VAT rates per jurisdiction', [
    'jur_cd text pk', 'eff_dt date pk', 'rate numeric(6,4)',
  ]),
  T('billing', 'usage_rec', 40_000_000, 'Metered usage per subscription per day (API calls, seats, storage)', [
    'sub_id integer pk >billing.sub', 'usage_dt date pk', 'metric_cd text pk # API_CALLS, SEATS, STORAGE_GB', 'qty numeric(14,2)',
  ]),

  // ---- procurement --------------------------------------------------------------------------
  T('procurement', 'vnd', 3_100, 'Vendors (suppliers) we buy from', [
    'vnd_id integer pk', 'vnd_nm text nn', 'ctry_cd char(2)', 'pay_terms text # e.g. NET30', 'rating integer', 'actv_flg boolean',
  ]),
  T('procurement', 'po_hdr', 410_000, 'Purchase orders (POs) sent to vendors; tot_amt is the spend', [
    'po_id integer pk', 'vnd_id integer >procurement.vnd', 'buyer_emp_id integer >hr.emp # Buyer who raised it', 'po_dt date',
    'exp_dlv_dt date # Expected delivery date', 'stat_cd text', 'tot_amt numeric(14,2)',
  ]),
  T('procurement', 'po_ln', 1_900_000, 'Purchase order lines', [
    'po_id integer pk >procurement.po_hdr', 'ln_no integer pk', 'prd_id integer >inventory.prd', 'qty integer', 'unit_cost numeric(12,2)',
  ]),
  T('procurement', 'grn', 520_000, 'Goods receipts (receiving) against purchase orders; late when rcv_dt is after the expected delivery date', [
    'grn_id integer pk', 'po_id integer >procurement.po_hdr', 'wh_id integer >inventory.wh', 'rcv_dt date # Date the goods arrived', 'rcv_qty integer',
  ]),
  T('procurement', 'ap_inv', 450_000, 'Accounts payable: invoices from vendors (supplier bills) and when we paid them', [
    'ap_inv_id integer pk', 'vnd_id integer >procurement.vnd', 'po_id integer >procurement.po_hdr', 'inv_dt date', 'due_dt date', 'amt numeric(14,2)', 'paid_dt date',
  ]),
  T('procurement', 'vnd_ctr', 2_600, 'Contracts (agreements) with vendors', [
    'ctr_id integer pk', 'vnd_id integer >procurement.vnd', 'start_dt date', 'end_dt date # Expiry', 'ctr_val numeric(14,2)',
  ]),
  T('procurement', 'vnd_prd', 64_000, 'Approved sources: which vendor supplies which product, lead time and cost', [
    'vnd_id integer pk >procurement.vnd', 'prd_id integer pk >inventory.prd', 'lead_days integer', 'unit_cost numeric(12,2)',
  ]),
  T('procurement', 'rfq', 7_000, 'Requests for quotation (tenders)', [
    'rfq_id integer pk', 'issue_dt date', 'prd_id integer >inventory.prd', 'qty integer',
  ]),
  T('procurement', 'rfq_bid', 29_000, 'Bids (quotes) vendors submitted on RFQs', [
    'rfq_id integer pk >procurement.rfq', 'vnd_id integer pk >procurement.vnd', 'bid_amt numeric(14,2)', 'bid_dt date',
  ]),
  T('procurement', 'vnd_scr', 37_000, 'Vendor scorecards per month: on-time delivery rate and defect rate', [
    'vnd_id integer pk >procurement.vnd', 'period_mo date pk', 'on_time_pct numeric(5,2)', 'defect_pct numeric(5,2)',
  ]),

  // ---- manufacturing ------------------------------------------------------------------------
  T('manufacturing', 'wo', 640_000, 'Work orders (production orders) on the shop floor: planned and good quantity, scheduled and actual times', [
    'wo_id integer pk', 'prd_id integer >inventory.prd', 'plant_id integer >manufacturing.plant', 'line_id integer >manufacturing.prod_ln',
    'sched_start timestamp', 'sched_end timestamp', 'act_start timestamp', 'act_end timestamp', 'plan_qty integer', 'good_qty integer # Output', 'stat_cd text',
  ]),
  T('manufacturing', 'plant', 9, 'Plants (factories, manufacturing sites)', [
    'plant_id integer pk', 'plant_nm text # e.g. Monterrey', 'ctry_cd char(2)',
  ]),
  T('manufacturing', 'prod_ln', 48, 'Production lines (assembly lines) in each plant', [
    'line_id integer pk', 'plant_id integer >manufacturing.plant', 'line_nm text # e.g. Line 3', 'capacity_per_hr integer',
  ]),
  T('manufacturing', 'bom', 96_000, 'Bill of materials: the components (parts) of each finished product', [
    'parent_prd_id integer pk >inventory.prd', 'comp_prd_id integer pk >inventory.prd', 'qty_per numeric(10,3)',
  ]),
  T('manufacturing', 'rtg_op', 44_000, 'Routing: the operations (steps) to make each product and the work center of each', [
    'prd_id integer pk >inventory.prd', 'op_seq integer pk', 'wc_id integer >manufacturing.wc', 'std_min numeric(8,2) # Standard minutes',
  ]),
  T('manufacturing', 'wc', 410, 'Work centers (machines, stations) on production lines', [
    'wc_id integer pk', 'line_id integer >manufacturing.prod_ln', 'wc_nm text',
  ]),
  T('manufacturing', 'dt_evt', 300_000, 'Downtime events: machine stoppages and breakdowns', [
    'dt_id integer pk', 'wc_id integer >manufacturing.wc', 'start_ts timestamp', 'end_ts timestamp', 'rsn_cd text # BREAKDOWN, CHANGEOVER, NO_MATERIAL, PLANNED',
  ]),
  T('manufacturing', 'qc_insp', 800_000, 'Quality inspections of work orders: sample size and defects found', [
    'insp_id integer pk', 'wo_id integer >manufacturing.wo', 'insp_dt date', 'sample_qty integer', 'defect_qty integer', 'result_cd text # PASS, FAIL',
  ]),
  T('manufacturing', 'scrap', 270_000, 'Scrap (waste, rejected units) recorded per work order', [
    'wo_id integer pk >manufacturing.wo', 'scrap_dt date pk', 'qty integer', 'rsn_cd text',
  ]),
  T('manufacturing', 'maint_ord', 95_000, 'Maintenance orders: preventive and corrective repairs of machines, with cost', [
    'mo_id integer pk', 'wc_id integer >manufacturing.wc', 'typ text # PREVENTIVE, CORRECTIVE', 'open_dt date', 'close_dt date', 'cost numeric(12,2)',
  ]),

  // ---- marketing ----------------------------------------------------------------------------
  T('marketing', 'cmp', 2_400, 'Marketing campaigns (ads, promotions, newsletters)', [
    'cmp_id integer pk', 'cmp_nm text # e.g. Black Friday 2024', 'ch_cd text # Channel: EMAIL, SEARCH, SOCIAL, DISPLAY', 'start_dt date', 'end_dt date', 'bud_amt numeric(12,2) # Budget',
  ]),
  T('marketing', 'cmp_spend', 610_000, 'Daily ad spend (marketing cost), impressions and clicks per campaign', [
    'cmp_id integer pk >marketing.cmp', 'spend_dt date pk', 'amt numeric(12,2)', 'impr integer # Impressions', 'clk integer # Clicks',
  ]),
  T('marketing', 'lead', 1_300_000, 'Leads (prospects) captured by campaigns; cust_id is set once one becomes a customer', [
    'lead_id integer pk', 'email text', 'src_cd text', 'cmp_id integer >marketing.cmp', 'crt_dt date', 'score integer', 'cust_id integer >sales.cust # Converted to',
  ]),
  T('marketing', 'seg', 140, 'Audience segments', [
    'seg_id integer pk', 'seg_nm text # e.g. Loyal, At risk, New', 'rule_txt text',
  ]),
  T('marketing', 'seg_mbr', 410_000, 'Which customers are in which audience segment', [
    'seg_id integer pk >marketing.seg', 'cust_id integer pk >sales.cust',
  ]),
  T('marketing', 'em_snd', 9_000, 'Email sends (newsletter blasts) of campaigns', [
    'snd_id integer pk', 'cmp_id integer >marketing.cmp', 'snd_dt date', 'recipients integer',
  ]),
  T('marketing', 'em_evt', 48_000_000, 'Email events: opens, clicks, bounces, unsubscribes', [
    'snd_id integer >marketing.em_snd', 'cust_id integer >sales.cust', 'evt_typ text # OPEN, CLICK, BOUNCE, UNSUBSCRIBE', 'evt_ts timestamp',
  ]),
  T('marketing', 'attrib', 2_600_000, 'Attribution: the campaign credited for each order and its share', [
    'so_id bigint pk >sales.so_hdr', 'cmp_id integer pk >marketing.cmp', 'credit_pct numeric(5,2)',
  ]),
  T('marketing', 'utm', 6_100, 'Tracking parameters (UTM) of each campaign', [
    'utm_id integer pk', 'cmp_id integer >marketing.cmp', 'src text', 'med text',
  ]),
  T('marketing', 'survey_rsp', 220_000, 'Customer satisfaction survey responses (NPS score 0-10)', [
    'rsp_id integer pk', 'cust_id integer >sales.cust', 'rsp_dt date', 'nps_score integer', 'comment_txt text',
  ]),

  // ---- support ------------------------------------------------------------------------------
  T('support', 'tkt', 1_700_000, 'Support tickets (cases, complaints, help desk requests) raised by customers', [
    'tkt_id bigint pk', 'cust_id integer >sales.cust', 'opened_ts timestamp', 'closed_ts timestamp # Resolved at', 'prio_cd text # P1, P2, P3, P4',
    'cat_cd text', 'agent_id integer >support.agent', 'chan_cd text # EMAIL, PHONE, CHAT', 'stat_cd text',
  ]),
  T('support', 'agent', 620, 'Support agents (customer service representatives)', [
    'agent_id integer pk', 'agent_nm text # Full name', 'emp_id integer >hr.emp', 'team_id integer >support.team', 'tier integer',
  ]),
  T('support', 'team', 30, 'Support teams (queues)', [
    'team_id integer pk', 'team_nm text',
  ]),
  T('support', 'tkt_msg', 12_000_000, 'Messages (replies, internal notes) on tickets', [
    'msg_id bigint pk', 'tkt_id bigint >support.tkt', 'sent_ts timestamp', 'from_agent_flg boolean', 'body text',
  ]),
  T('support', 'sla_pol', 4, 'SLA policies: response and resolution targets per priority', [
    'prio_cd text pk', 'resp_hrs integer', 'res_hrs integer',
  ]),
  T('support', 'sla_brch', 150_000, 'SLA breaches: tickets that missed their response or resolution target', [
    'tkt_id bigint pk >support.tkt', 'brch_typ text pk # RESPONSE, RESOLUTION', 'brch_ts timestamp',
  ]),
  T('support', 'csat', 640_000, 'CSAT: satisfaction rating a customer gives after a ticket is solved', [
    'tkt_id bigint pk >support.tkt', 'rating integer # 1-5', 'rated_ts timestamp',
  ]),
  T('support', 'kb_art', 3_900, 'Knowledge base (help center, FAQ) articles and their views', [
    'art_id integer pk', 'title text', 'views integer', 'updated_dt date',
  ]),
  T('support', 'tkt_tag', 3_800_000, 'Tags on tickets', [
    'tkt_id bigint pk >support.tkt', 'tag text pk',
  ]),
  T('support', 'call_log', 5_100_000, 'Call center phone calls with wait and handle times', [
    'call_id bigint pk', 'agent_id integer >support.agent', 'cust_id integer >sales.cust', 'call_ts timestamp', 'wait_sec integer', 'handle_sec integer',
  ]),

  // ---- web analytics ------------------------------------------------------------------------
  T('web', 'sess', 88_000_000, 'Website sessions (visits), with device and traffic source', [
    'sess_id bigint pk', 'visitor_id bigint >web.visitor', 'start_ts timestamp', 'dur_sec integer', 'landing_pg_id integer >web.pg # Landing page',
    'ref_src text # Traffic source (referrer): google, facebook, direct', 'dev_typ text # Device: desktop, mobile, tablet', 'utm_id integer >marketing.utm',
  ]),
  T('web', 'visitor', 21_000_000, 'Website visitors; cust_id once they log in', [
    'visitor_id bigint pk', 'first_seen_ts timestamp', 'cust_id integer >sales.cust', 'ctry_cd char(2)',
  ]),
  T('web', 'pg', 18_000, 'Pages (URLs) of the website', [
    'pg_id integer pk', 'url text', 'pg_typ text # HOME, PRODUCT, CATEGORY, CHECKOUT',
  ]),
  T('web', 'pv', 410_000_000, 'Page views', [
    'pv_id bigint pk', 'sess_id bigint >web.sess', 'pg_id integer >web.pg', 'view_ts timestamp', 'time_on_pg_sec integer',
  ]),
  T('web', 'evt', 900_000_000, 'Click-stream events: button clicks, add to cart, checkout steps', [
    'evt_id bigint pk', 'sess_id bigint >web.sess', 'evt_nm text', 'evt_ts timestamp', 'prd_id integer >inventory.prd',
  ]),
  T('web', 'cnv', 2_900_000, 'Conversions: goals completed on the website, purchases with their order', [
    'cnv_id bigint pk', 'sess_id bigint >web.sess', 'so_id bigint >sales.so_hdr', 'cnv_ts timestamp', 'goal_cd text # PURCHASE, SIGNUP, DEMO',
  ]),
  T('web', 'srch_q', 30_000_000, 'Searches typed into the site search box', [
    'q_id bigint pk', 'sess_id bigint >web.sess', 'q_txt text', 'results_cnt integer',
  ]),
  T('web', 'ab_exp', 260, 'A/B tests (experiments)', [
    'exp_id integer pk', 'exp_nm text # e.g. checkout-button-color', 'start_dt date', 'end_dt date',
  ]),
  T('web', 'ab_asg', 14_000_000, 'A/B test assignments: the variant each visitor saw', [
    'exp_id integer pk >web.ab_exp', 'visitor_id bigint pk >web.visitor', 'variant text # A, B',
  ]),
  T('web', 'cart_abd', 6_000_000, 'Abandoned shopping carts and their value', [
    'cart_id bigint pk', 'sess_id bigint >web.sess', 'abd_ts timestamp', 'cart_val numeric(12,2)',
  ]),

  // ---- crm ----------------------------------------------------------------------------------
  T('crm', 'acct', 19_000, 'CRM accounts: the companies (B2B clients) behind customers', [
    'acct_id integer pk', 'cust_id integer >sales.cust', 'industry text # e.g. Banking, Retail, Healthcare', 'employees integer', 'owner_rep_id integer >sales.rep',
  ]),
  T('crm', 'cont', 96_000, 'Contacts: people at client companies', [
    'cont_id integer pk', 'acct_id integer >crm.acct', 'full_nm text', 'email text', 'title text',
  ]),
  T('crm', 'opp', 140_000, 'Opportunities (deals) in the sales pipeline', [
    'opp_id integer pk', 'acct_id integer >crm.acct', 'owner_rep_id integer >sales.rep', 'stage_cd text # PROSPECT, QUALIFIED, PROPOSAL, WON, LOST',
    'amt numeric(14,2) # Deal value', 'crt_dt date', 'close_dt date',
  ]),
  T('crm', 'opp_stg_hist', 610_000, 'Stage changes of opportunities over time', [
    'opp_id integer pk >crm.opp', 'chg_ts timestamp pk', 'stage_cd text',
  ]),
  T('crm', 'act_log', 2_300_000, 'Sales activities: calls, meetings and emails with clients', [
    'act_id bigint pk', 'acct_id integer >crm.acct', 'cont_id integer >crm.cont', 'rep_id integer >sales.rep', 'act_typ text # CALL, MEETING, EMAIL', 'act_ts timestamp',
  ]),
  T('crm', 'quote', 88_000, 'Quotes (proposals) sent to clients for opportunities', [
    'quote_id integer pk', 'opp_id integer >crm.opp', 'quote_dt date', 'amt numeric(14,2)', 'valid_to date',
  ]),
  T('crm', 'quote_ln', 390_000, 'Quote lines', [
    'quote_id integer pk >crm.quote', 'ln_no integer pk', 'prd_id integer >inventory.prd', 'qty integer', 'prc numeric(12,2)',
  ]),
  T('crm', 'lost_rsn', 16, 'Loss reasons', [
    'rsn_cd text pk', 'descr text # PRICE, FEATURES, TIMING, COMPETITOR',
  ]),
  T('crm', 'opp_lost', 38_000, 'Lost opportunities: the reason and the competitor that won', [
    'opp_id integer pk >crm.opp', 'rsn_cd text >crm.lost_rsn', 'comp_nm text # Competitor',
  ]),
  T('crm', 'partner', 420, 'Channel partners (resellers, distributors) and their tier', [
    'partner_id integer pk', 'partner_nm text', 'tier text # GOLD, SILVER, BRONZE', 'rgn_cd text >sales.rgn',
  ]),
];

/** The domains, in the order a smaller catalog keeps them. */
export const DOMAINS: readonly string[] = ['sales', 'inventory', 'shipping', 'billing', 'hr', 'finance', 'procurement', 'support', 'marketing', 'crm', 'manufacturing', 'web'];

export interface DomainQuestion {
  question: string;
  /** `schema.table` of every table the SQL needs, join tables included */
  answer: string[];
}

const Q = (question: string, ...answer: string[]): DomainQuestion => ({ question, answer });

/** Business questions in users' own words, with the tables that answer them. */
export const DOMAIN_QUESTIONS: readonly DomainQuestion[] = [
  // sales
  Q('Who are our top 10 clients by revenue in 2023?', 'sales.cust', 'sales.so_hdr'),
  Q('Total revenue per sales region last quarter', 'sales.so_hdr', 'sales.cust', 'sales.rgn'),
  Q('Which products sold the most units in March 2024?', 'sales.so_ln', 'sales.so_hdr', 'inventory.prd'),
  Q('How many orders were cancelled per channel this year?', 'sales.so_hdr'),
  Q('Which salespeople beat their quota in Q4 2023?', 'sales.rep', 'sales.quota', 'sales.so_hdr'),
  Q('What is the return rate by product category?', 'sales.rtn', 'sales.so_ln', 'inventory.prd', 'inventory.cat'),
  Q("Revenue from orders that used the coupon 'SPRING20'", 'sales.so_hdr', 'sales.so_promo', 'sales.promo_cd'),
  Q('Average order value for wholesale customers in Germany', 'sales.so_hdr', 'sales.cust'),
  Q('Refunds paid for items returned as damaged since January 2024', 'sales.rtn'),
  // shipping
  Q('How many late deliveries did each carrier have in 2023?', 'shipping.shp', 'shipping.carr'),
  Q('Late shipments by warehouse last month', 'shipping.shp', 'inventory.wh'),
  Q('Average freight cost per shipment by service level', 'shipping.shp', 'shipping.svc_lvl'),
  Q('Which customers had the most late deliveries?', 'shipping.shp', 'sales.so_hdr', 'sales.cust'),
  Q('Shipments with a damaged delivery exception handled by FedEx', 'shipping.dlv_exc', 'shipping.shp', 'shipping.carr'),
  Q('Total amount carriers billed us per carrier in 2024', 'shipping.frt_inv', 'shipping.carr'),
  Q('Where is the parcel with tracking number 1Z999AA10123456784?', 'shipping.shp_pkg', 'shipping.trk_evt'),
  Q('On-time delivery rate for express shipments', 'shipping.shp', 'shipping.svc_lvl'),
  Q('Deliveries to addresses in Paris last week', 'shipping.shp', 'shipping.addr'),
  // inventory
  Q('Which products are below their reorder point in the Dallas warehouse?', 'inventory.stk_lvl', 'inventory.reorder_pt', 'inventory.wh', 'inventory.prd'),
  Q('Stock on hand by category today', 'inventory.stk_lvl', 'inventory.prd', 'inventory.cat'),
  Q('Which product batches expire before June 2025?', 'inventory.lot', 'inventory.prd'),
  Q('Stock count discrepancies found in 2024, by warehouse', 'inventory.cyc_cnt', 'inventory.wh'),
  Q('How many units were transferred between distribution centers last month?', 'inventory.xfer'),
  Q('Discontinued items that are still in stock', 'inventory.prd', 'inventory.stk_lvl'),
  Q('Stock adjustments per warehouse this year', 'inventory.stk_mv', 'inventory.wh'),
  // hr
  Q('Headcount by department', 'hr.emp', 'hr.dept'),
  Q('Staff attrition per year since 2020', 'hr.emp'),
  Q('Average salary by job title', 'hr.comp', 'hr.emp', 'hr.job'),
  Q('Which employees took more than 20 days of vacation in 2023?', 'hr.lv_req', 'hr.emp'),
  Q('Average performance rating per department in 2024', 'hr.perf_rv', 'hr.emp', 'hr.dept'),
  Q('How long does it take to fill vacancies, by department?', 'hr.req', 'hr.dept'),
  Q('How many candidates came from referrals and were hired?', 'hr.appl'),
  Q("Who completed the 'Data Privacy Basics' training?", 'hr.trn_enr', 'hr.trn_crs', 'hr.emp'),
  Q('Employees in the Berlin office hired before 2015', 'hr.emp', 'hr.loc'),
  // finance
  Q('Operating expenses per cost center in fiscal year 2024', 'finance.gl_je_ln', 'finance.gl_je', 'finance.gl_acct', 'finance.cc', 'finance.fin_per'),
  Q('Budget versus actual spend for each cost center this quarter', 'finance.bud', 'finance.gl_je_ln', 'finance.gl_je', 'finance.cc', 'finance.fin_per'),
  Q('Which journal entries were posted to closed periods?', 'finance.gl_je', 'finance.fin_per'),
  Q('Travel and meals reimbursements by employee in 2023', 'finance.exp_rpt', 'finance.exp_ln', 'hr.emp'),
  Q('EUR to USD exchange rate on 2024-06-30', 'finance.fx_rt'),
  Q('Depreciation of equipment bought since 2021 by cost center', 'finance.fa_asset', 'finance.cc'),
  Q('Trial balance: debits and credits per ledger account for October 2024', 'finance.gl_je_ln', 'finance.gl_acct', 'finance.gl_je'),
  // billing
  Q('Overdue invoices by customer', 'billing.inv', 'sales.cust'),
  Q('Cash collected per month in 2024', 'billing.pmt'),
  Q('Which invoices were paid by wire transfer?', 'billing.pmt_alloc', 'billing.pmt', 'billing.inv'),
  Q('Monthly recurring revenue by plan', 'billing.sub', 'billing.plan'),
  Q('How many subscriptions churned in Q1 2024?', 'billing.sub'),
  Q('Credit notes issued to clients in the APAC region', 'billing.cr_memo', 'sales.cust', 'sales.rgn'),
  Q('Invoices that got a third payment reminder', 'billing.dunning', 'billing.inv'),
  Q('API calls used per subscription last month', 'billing.usage_rec', 'billing.sub'),
  // procurement
  Q('Total spend per vendor in 2023', 'procurement.po_hdr', 'procurement.vnd'),
  Q('Which suppliers deliver late most often?', 'procurement.grn', 'procurement.po_hdr', 'procurement.vnd'),
  Q('Purchase orders raised by each buyer last month', 'procurement.po_hdr', 'hr.emp'),
  Q('Unpaid supplier invoices due this week', 'procurement.ap_inv', 'procurement.vnd'),
  Q('Supplier contracts expiring in 2025', 'procurement.vnd_ctr', 'procurement.vnd'),
  Q('Cheapest supplier for each product', 'procurement.vnd_prd', 'procurement.vnd', 'inventory.prd'),
  Q('Lowest bid on each RFQ issued in 2024', 'procurement.rfq_bid', 'procurement.rfq', 'procurement.vnd'),
  Q('Vendors with an on-time rate under 90% on their scorecard', 'procurement.vnd_scr', 'procurement.vnd'),
  // manufacturing
  Q('Production output per plant in 2024', 'manufacturing.wo', 'manufacturing.plant'),
  Q("Machine downtime hours by reason on 'Line 3'", 'manufacturing.dt_evt', 'manufacturing.wc', 'manufacturing.prod_ln'),
  Q('Defect rate of work orders by product', 'manufacturing.qc_insp', 'manufacturing.wo', 'inventory.prd'),
  Q('Which components go into product SKU-1042?', 'manufacturing.bom', 'inventory.prd'),
  Q('Scrap quantity per production line last month', 'manufacturing.scrap', 'manufacturing.wo', 'manufacturing.prod_ln'),
  Q('Maintenance cost per machine this year', 'manufacturing.maint_ord', 'manufacturing.wc'),
  Q('Work orders that finished late at the Monterrey factory', 'manufacturing.wo', 'manufacturing.plant'),
  // marketing
  Q('Ad spend and clicks per campaign in 2024', 'marketing.cmp_spend', 'marketing.cmp'),
  Q('How many leads became customers, by campaign?', 'marketing.lead', 'marketing.cmp'),
  Q("Email open rate of the 'Black Friday 2024' newsletter", 'marketing.em_evt', 'marketing.em_snd', 'marketing.cmp'),
  Q('Revenue attributed to social media campaigns', 'marketing.attrib', 'marketing.cmp', 'sales.so_hdr'),
  Q('Average NPS by customer segment', 'marketing.survey_rsp', 'marketing.seg_mbr', 'marketing.seg'),
  Q('Cost per lead for search campaigns', 'marketing.cmp_spend', 'marketing.lead', 'marketing.cmp'),
  // support
  Q('Average resolution time of support tickets by priority', 'support.tkt'),
  Q('Which agents have the best CSAT scores?', 'support.csat', 'support.tkt', 'support.agent'),
  Q('How many complaints breached the SLA last month?', 'support.sla_brch', 'support.tkt'),
  Q('Tickets opened per team in 2024', 'support.tkt', 'support.agent', 'support.team'),
  Q('Average wait time in the call center by hour of day', 'support.call_log'),
  Q('Most common tags on P1 tickets', 'support.tkt_tag', 'support.tkt'),
  Q('Most viewed help center articles', 'support.kb_art'),
  // web
  Q('Website visits by device type last week', 'web.sess'),
  Q('Conversion rate by traffic source', 'web.cnv', 'web.sess'),
  Q('Most viewed pages in May 2024', 'web.pv', 'web.pg'),
  Q("Which variant converted better in the 'checkout-button-color' A/B test?", 'web.ab_asg', 'web.ab_exp', 'web.sess', 'web.cnv'),
  Q('Value of abandoned carts per day', 'web.cart_abd'),
  Q('What do visitors search for most on the site?', 'web.srch_q'),
  Q('Revenue from website orders by landing page', 'web.cnv', 'web.sess', 'web.pg', 'sales.so_hdr'),
  // crm
  Q('Pipeline value by stage for each sales rep', 'crm.opp', 'sales.rep'),
  Q('Win rate of deals closed in 2024', 'crm.opp'),
  Q('Why do we lose deals, and to which competitors?', 'crm.opp_lost', 'crm.lost_rsn'),
  Q('Meetings with clients in the banking industry this quarter', 'crm.act_log', 'crm.acct'),
  Q('Quotes sent for opportunities above $100k', 'crm.quote', 'crm.opp'),
  Q('Contacts at our 5 biggest accounts by revenue', 'crm.cont', 'crm.acct', 'sales.so_hdr'),
  Q('Revenue from resellers by partner tier', 'sales.so_hdr', 'crm.partner'),
  // across domains
  Q('Do customers with more support tickets buy less?', 'support.tkt', 'sales.so_hdr', 'sales.cust'),
  Q('Gross margin by product in 2023', 'sales.so_ln', 'sales.so_hdr', 'inventory.prd'),
  Q('Which vendors supply the products that get returned the most?', 'procurement.vnd_prd', 'procurement.vnd', 'sales.rtn'),
];

/** Entities of the semantic layer: the words people use for some tables and columns. */
export const DOMAIN_SYNONYMS: ReadonlyArray<{ table: string; display: string; synonyms: string[]; columns?: Record<string, string[]> }> = [
  { table: 'sales.cust', display: 'Customers', synonyms: ['clients', 'accounts', 'buyers'], columns: { cust_nm: ['customer name', 'client name'], seg_cd: ['segment'] } },
  { table: 'sales.so_hdr', display: 'Orders', synonyms: ['sales orders', 'purchases', 'revenue', 'sales'], columns: { tot_amt: ['revenue', 'order value', 'sales amount'], ord_dt: ['order date'] } },
  { table: 'sales.so_ln', display: 'Order lines', synonyms: ['order items', 'line items', 'units sold'] },
  { table: 'sales.rep', display: 'Sales reps', synonyms: ['salespeople', 'account executives', 'sellers'] },
  { table: 'sales.rtn', display: 'Returns', synonyms: ['RMAs', 'refunds', 'returned items'] },
  { table: 'inventory.prd', display: 'Products', synonyms: ['items', 'SKUs', 'merchandise'] },
  { table: 'inventory.wh', display: 'Warehouses', synonyms: ['distribution centers', 'DCs', 'depots'] },
  { table: 'inventory.stk_lvl', display: 'Stock levels', synonyms: ['inventory', 'stock on hand'] },
  { table: 'shipping.shp', display: 'Shipments', synonyms: ['deliveries', 'late deliveries', 'consignments'], columns: { dlv_dt: ['delivery date'], promised_dt: ['promised date', 'due date'] } },
  { table: 'shipping.carr', display: 'Carriers', synonyms: ['couriers', 'shipping companies'] },
  { table: 'hr.emp', display: 'Employees', synonyms: ['staff', 'headcount', 'workers', 'people'] },
  { table: 'billing.inv', display: 'Invoices', synonyms: ['bills', 'receivables'] },
  { table: 'billing.pmt', display: 'Payments', synonyms: ['receipts', 'cash collected'] },
  { table: 'procurement.vnd', display: 'Vendors', synonyms: ['suppliers', 'sellers we buy from'] },
  { table: 'procurement.po_hdr', display: 'Purchase orders', synonyms: ['POs', 'spend', 'purchasing'] },
  { table: 'support.tkt', display: 'Support tickets', synonyms: ['cases', 'complaints', 'help desk requests'] },
  { table: 'crm.opp', display: 'Opportunities', synonyms: ['deals', 'pipeline'] },
  { table: 'marketing.cmp', display: 'Campaigns', synonyms: ['ads', 'promotions', 'marketing campaigns'] },
  { table: 'manufacturing.wo', display: 'Work orders', synonyms: ['production orders', 'jobs', 'output'] },
  { table: 'web.sess', display: 'Sessions', synonyms: ['visits', 'traffic'] },
];
