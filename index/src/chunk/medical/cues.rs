//! Content cues: what a stretch of a note holds, read from its words.
//!
//! The section gives a chunk most of its kinds; these cues catch what sits elsewhere
//! (a dose in the HPI, vitals inside the physical exam, an allergy in a one-line note).
//! Each cue is a pattern compiled once; a section that cannot hold a kind (a family
//! history's "mother had diabetes" is no diagnosis of the patient) turns that cue off.

use std::sync::LazyLock;

use regex::Regex;

use super::super::kinds::{Kind, Kinds};
use super::sections::Section;

/// Word boundaries are ASCII ones (`(?-u:\b)`): the Unicode kind keeps the regex engine
/// off its fast DFA paths on any text with a non-ASCII char, and notes' cue words are ASCII.
fn re(pattern: &str) -> Regex {
    Regex::new(&pattern.replace(r"\b", r"(?-u:\b)")).expect("the cue patterns are valid")
}

/// A dose: number and unit (`20 mg`, `2 puffs`, `0.5 mg/kg/day`), not a concentration
/// (`13 g/dL`, whose `/` the last group catches).
static DOSE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b\d+(?:\.\d+)?\s?(?:mg|mcg|µg|ug|g|gm|grams?|ml|units?|iu|meq|tabs?|tablets?|capsules?|caps|puffs?|drops?|sprays?)(?:/(?:kg|day|d|hr|h|dose|week)){0,2}\b(/)?",
    )
});

/// Dosing frequencies and routes written as abbreviations.
static FREQUENCY: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b(?:BID|TID|QID|QHS|QAM|QPM|PRN|prn|qhs|q\d{1,2}h|q\.?d\.|b\.i\.d\.|t\.i\.d\.|p\.o\.|PO|IV|IM|SQ|subq|SL)\b"));

/// Drug names: common generics and brands, and the generic stems (`-pril`, `-statin`…).
static DRUG: LazyLock<Regex> = LazyLock::new(|| {
    let names = [
        "aspirin",
        "acetaminophen",
        "tylenol",
        "advil",
        "motrin",
        "aleve",
        "naproxen",
        "insulin",
        "glipizide",
        "glyburide",
        "lasix",
        "warfarin",
        "coumadin",
        "eliquis",
        "xarelto",
        "clopidogrel",
        "plavix",
        "levothyroxine",
        "synthroid",
        "gabapentin",
        "pregabalin",
        "lyrica",
        "sertraline",
        "zoloft",
        "citalopram",
        "escitalopram",
        "lexapro",
        "bupropion",
        "wellbutrin",
        "trazodone",
        "amitriptyline",
        "venlafaxine",
        "xanax",
        "zolpidem",
        "ambien",
        "melatonin",
        "prilosec",
        "nexium",
        "ondansetron",
        "zofran",
        "metoclopramide",
        "docusate",
        "senna",
        "miralax",
        "polyethylene glycol",
        "augmentin",
        "zithromax",
        "cephalexin",
        "keflex",
        "ceftriaxone",
        "cefazolin",
        "cefdinir",
        "bactrim",
        "sulfamethoxazole",
        "trimethoprim",
        "nitrofurantoin",
        "macrobid",
        "metronidazole",
        "flagyl",
        "medrol",
        "ventolin",
        "proventil",
        "symbicort",
        "advair",
        "flovent",
        "fluticasone",
        "flonase",
        "budesonide",
        "singulair",
        "cetirizine",
        "zyrtec",
        "claritin",
        "benadryl",
        "diphenhydramine",
        "hydroxyzine",
        "norvasc",
        "chlorthalidone",
        "spironolactone",
        "bumetanide",
        "torsemide",
        "carvedilol",
        "diltiazem",
        "verapamil",
        "digoxin",
        "hydralazine",
        "clonidine",
        "isosorbide",
        "nitroglycerin",
        "lipitor",
        "crestor",
        "zocor",
        "ezetimibe",
        "allopurinol",
        "colchicine",
        "tramadol",
        "oxycodone",
        "hydrocodone",
        "norco",
        "percocet",
        "morphine",
        "fentanyl",
        "methadone",
        "buprenorphine",
        "suboxone",
        "naloxone",
        "narcan",
        "cyclobenzaprine",
        "flexeril",
        "methocarbamol",
        "tizanidine",
        "baclofen",
        "meloxicam",
        "celecoxib",
        "celebrex",
        "diclofenac",
        "voltaren",
        "topiramate",
        "topamax",
        "levetiracetam",
        "keppra",
        "lamotrigine",
        "valproate",
        "depakote",
        "phenytoin",
        "carbamazepine",
        "lithium",
        "quetiapine",
        "seroquel",
        "olanzapine",
        "risperidone",
        "aripiprazole",
        "abilify",
        "haloperidol",
        "donepezil",
        "memantine",
        "tamsulosin",
        "flomax",
        "finasteride",
        "oxybutynin",
        "estradiol",
        "medroxyprogesterone",
        "ferrous sulfate",
        "cyanocobalamin",
        "folic acid",
        "potassium chloride",
        "magnesium oxide",
        "calcium carbonate",
        "multivitamin",
        "lovenox",
        "ozempic",
        "victoza",
        "trulicity",
        "jardiance",
        "januvia",
        "humira",
        "methotrexate",
        "hydroxychloroquine",
        "plaquenil",
        "mesalamine",
        "epinephrine",
        "epipen",
        "nicotine patch",
        "varenicline",
        "chantix",
        "naltrexone",
        "prednisone",
        "mounjaro",
        "tirzepatide",
        "benzonatate",
        "guaifenesin",
        "mucinex",
        "dextromethorphan",
        "pseudoephedrine",
        "sudafed",
        "tessalon",
        "imitrex",
        "toradol",
        "ketorolac",
        "valacyclovir",
        "valtrex",
        "tamiflu",
        "oseltamivir",
        "paxlovid",
        "vitamin d3",
        "cholecalciferol",
        "glucophage",
        "metformin",
        "steroids",
    ];
    let stems = "pril|sartan|olol|statin|prazole|dipine|cillin|mycin|floxacin|cycline|formin|gliptin|gliflozin|glutide|triptan|azepam|azolam|tidine|parin|xaban|gatran|lukast|terol|olone|isone|asone|profen|oxetine|tadine|afil|umab|ximab|zumab|tinib|ovir|avir|conazole|semide|thiazide|apine|idone|azole";
    re(&format!(r"(?i)\b(?:{}|[a-z]{{3,}}(?:{stems}))\b", names.join("|")))
});

static ALLERGY: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:nkda|nka|nkfa|no known (?:drug |food |medication )?allerg(?:ies|y)|allergic to|allerg(?:y|ies) to|allergic reactions? to|anaphylactic reactions? to|anaphylaxis to|[a-z]+ allerg(?:y|ies)|allergies include|(?:denies|no) (?:any )?(?:known )?(?:drug |medication )?allergies|intoleran(?:ce|t) to|anaphylaxis|seasonal allergies|environmental allergies|drug allergies)\b",
    )
});

static VITAL: LazyLock<[Regex; 5]> = LazyLock::new(|| {
    [
        re(r"(?i)\b(?:bp|b/p|blood pressure)\s*(?:[:=]|of|is|was|at|reading)?\s*(?:of|was|is)?\s*\d{2,3}\s*/\s*\d{2,3}"),
        re(
            r"(?i)\b(?:hr|heart rate|pulse|pulse rate|rr|resp(?:iratory)? rate|resp|respirations|temp|temperature|tmax|spo2|spo₂|sp02|o2 sat(?:uration)?s?|oxygen saturation|sats?|saturation|pulse ox(?:imetry)?|weight|wt|bmi)\s*(?:[:=]|of|is|was|at)?\s*(?:of|was|is)?\s*\d{2,3}",
        ),
        re(
            r"(?i)\d{2,3}\s?(?:bpm|beats per minute|beats/min|breaths per minute|breaths/min|mmhg)\b|\d{2,3}(?:\.\d)?\s?(?:°\s?[fc]\b|degrees\b)|\d{2,3}\s?(?:%|percent)\s?(?:on\s)?(?:room air|ra\b|\d+\s?l\b)|\b\d{2,3}(?:\.\d)?\s?kg\b",
        ),
        re(r"\b(?:9\d|10\d)(?:\.\d)?\s?°?\s?F\b|\b3\d\.\d\s?°?\s?C\b"),
        re(
            r"(?i)\b(?:afebrile|febrile|normotensive|hypotensive|tachycardic|(?:vital signs|vitals) (?:are|were) (?:stable|normal|unremarkable|within normal limits|reviewed))\b",
        ),
    ]
});

const ANALYTES: &str = "hemoglobin a1c|hemoglobin|hba1c|a1c|hematocrit|white (?:blood )?(?:cell )?count|wbc|rbc|platelets?|platelet count|sodium|potassium|chloride|bicarbonate|bun|creatinine|glucose|blood sugars?|calcium|magnesium|phosphorus|albumin|bilirubin|alt|ast|alkaline phosphatase|alk phos|inr|ptt|tsh|free t4|ldl|hdl|cholesterol|triglycerides|ferritin|iron|vitamin d|vitamin b12|b12|folate|troponin|bnp|nt-probnp|lactate|lactic acid|crp|c-reactive protein|esr|sed rate|psa|egfr|gfr|uric acid|lipase|amylase|ck|cpk|d-dimer|procalcitonin|ammonia|cortisol|hgb|hct|microalbumin|urinalysis|urine culture|blood cultures?|strep test|rapid strep|covid test|pcr|lipid panel|cbc|bmp|cmp|metabolic panel|blood count|iron studies|liver enzymes|liver function tests|lfts|kidney function|renal function|thyroid function|blood work|labs";

/// An analyte then, within a few words, a value or a verdict; a verdict then an analyte;
/// a value with a laboratory unit; a short symbol with its value (`K 4.1`).
static LAB: LazyLock<[Regex; 5]> = LazyLock::new(|| {
    [
        re(&format!(
            r"(?i)\b(?:{ANALYTES})\b[^.\n;,]{{0,40}}?(?:[\s:=(]\s*[<>≤≥]?\s*(\d+(?:\.\d+)?)\b(\s*(?:weeks?|days?|months?|years?|hours?|times?|minutes?|mg|mcg|units?|tablets?)\b)?|\b(?:low|high|elevated|normal|abnormal|decreased|increased|within normal limits|wnl|unremarkable|negative|positive|raised|reduced|borderline)\b)"
        )),
        re(&format!(r"(?i)\b(?:low|high|elevated|normal|abnormal|decreased|increased|raised|reduced)\s+(?:\w+\s+)?(?:{ANALYTES})\b")),
        re(
            r"(?i)\b\d+(?:\.\d+)?\s?(?:mg/dl|g/dl|mmol/l|meq/l|u/l|iu/l|ng/ml|pg/ml|ng/dl|mcg/dl|µg/dl|ug/dl|k/ul|k/µl|x\s?10\^?\d+/l|miu/l|mu/l|cells/mm3|mg/l|µmol/l|umol/l|mm/hr|ml/min)",
        ),
        re(r"\b(?:Na|K|Cl|Cr|Ca|Mg|Hb|Hgb|CO2|HCO3|WBC|Plt|Hct|BUN|AST|ALT|TSH|INR|LDL|HDL|A1c|HbA1c)\s*[:=]?\s*[<>]?\d+(?:\.\d+)?\b"),
        re(
            r"(?i)\b(?:x-rays?|radiographs?|echocardiogram|echo|ct(?: scan)?|mri|ultrasound|ecg|ekg|imaging|biopsy|scan|cultures?|swab|ejection fraction)\b[^.\n;]{0,40}?\b(?:shows?|showed|demonstrat(?:es|ed)|revealed?|reveals|was (?:positive|negative|normal|abnormal|unremarkable)|were (?:positive|negative|normal|unremarkable)|remained (?:positive|negative)|of \d+\s?%)",
        ),
    ]
});

static DIAGNOSIS: LazyLock<[Regex; 2]> = LazyLock::new(|| {
    [
        re(
            r"(?i)\b(?:diagnosed with|diagnosis of|diagnosis is|diagnoses? (?:of|include)|consistent with|suggestive of|concerning for|likely (?:secondary to|due to)|differential (?:diagnosis )?includes|rule out|r/o|medical history (?:significant |notable |positive )?(?:for|of))\b",
        ),
        re(
            r"(?i)\b(?:hypertension|htn|diabetes(?: mellitus)?|dm2|t2dm|hyperlipidemia|hypercholesterolemia|dyslipidemia|asthma|copd|chf|heart failure|atrial fibrillation|afib|coronary artery disease|cad|ckd|chronic kidney disease|pneumonia|depression|anxiety|hypothyroidism|hyperthyroidism|gerd|reflux|osteoarthritis|arthritis|obesity|anemia|cancer|carcinoma|migraines?|stroke|dementia|sepsis|cellulitis|uti|urinary tract infection|bronchitis|sinusitis|otitis media|pharyngitis|gastroenteritis|fracture|sprain|tendinitis|tendonitis|neuropathy|cirrhosis|hepatitis|pancreatitis|appendicitis|diverticulitis|colitis|crohn's disease|psoriasis|eczema|dermatitis|gout|lupus|osteoporosis|sleep apnea|insomnia|adhd|bipolar disorder|schizophrenia|kidney stones?|nephrolithiasis|hypokalemia|hyponatremia|covid-19|influenza|strep throat|conjunctivitis|concussion|carpal tunnel syndrome|radiculopathy|plantar fasciitis)\b",
        ),
    ]
});

/// A relative as the sentence's subject: "her brother was diagnosed with strep" is
/// no diagnosis of the patient.
static RELATIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:mother|father|mom|dad|brother|sister|sibling|siblings|son|daughter|wife|husband|grandmother|grandfather|aunt|uncle|cousin|family)\b",
    )
});

/// The consent line that closes an assessment and plan ("The patient understands and
/// agrees with the recommended medical treatment plan"): no plan of its own.
static CONSENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?:patient agreements:\s*)?[^.\n]*\b(?:understands? and agrees?|agrees?) (?:with|to) the (?:recommended )?(?:medical )?(?:treatment )?plan\b[^.\n]*\.?",
    )
});

/// Negations that undo a disease word before it in the same sentence.
static NEGATION: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(?:no|denies|denied|negative for|without|free of|not)\b[^.;\n]*$"));

static PLAN: LazyLock<[Regex; 2]> = LazyLock::new(|| {
    [
        re(
            r"(?i)\b(?:will (?:order|start|begin|continue|increase|decrease|reduce|stop|discontinue|hold|refer|schedule|obtain|check|recheck|repeat|prescribe|follow|see|plan|get|send|monitor|consider|initiate|add|switch|change|titrate|taper|provide|give|arrange|place|perform|proceed|discuss|call|contact|need|have|be (?:referred|started|scheduled|sent|seen)|return)|plan (?:is|to|will)|we(?: will|'ll| are going to)|i(?: will|'ll| am going to| would like to)|recommend(?:ed|s)?|advised?|follow(?:[- ])?up (?:in|with|appointment)|f/u|return (?:to (?:the )?clinic|in|if)|rtc|referral (?:to|for|was)|refer(?:red)? (?:to|for)|schedule[ds]?|ordered|prescribed|prescription for|medical treatment|additional testing|patient education|counsel(?:ed|ing))\b",
        ),
        re(
            r"(?im)(?:^|[.:•]\s*|^[-*]\s*)(?:continue|start|stop|increase|decrease|discontinue|hold|begin|obtain|check|recheck|repeat|order|refer|schedule|follow up|return|take|avoid|apply|use|monitor|encourage|consider)\b",
        ),
    ]
});

/// The kinds `text` (one unit of a section) shows by its words.
pub(crate) fn kinds(text: &str, section: Option<Section>) -> Kinds {
    let mut kinds = Kinds::EMPTY;
    let family = section == Some(Section::Family);
    if family {
        return kinds;
    }
    if section != Some(Section::Allergies) && is_medication(text) {
        kinds.insert(Kind::Medication);
    }
    if ALLERGY.is_match(text) {
        kinds.insert(Kind::Allergy);
    }
    if VITAL.iter().any(|r| r.is_match(text)) {
        kinds.insert(Kind::Vital);
    }
    if is_lab(text) {
        kinds.insert(Kind::Lab);
    }
    let assessing = matches!(section, Some(Section::Assessment | Section::AssessmentPlan));
    let diagnosis_here = !matches!(section, Some(Section::Ros | Section::Allergies));
    if diagnosis_here && (is_diagnosis(text) || (assessing && is_problem_title(text))) {
        kinds.insert(Kind::Diagnosis);
    }
    let without_consent = CONSENT.replace_all(text, "");
    if plans_here(section) && PLAN.iter().any(|r| r.is_match(&without_consent)) {
        kinds.insert(Kind::Plan);
    }
    kinds
}

/// Sections that record what happened or was found, where "advised" or "will" do not
/// make a plan.
fn plans_here(section: Option<Section>) -> bool {
    use Section::*;
    !matches!(
        section,
        Some(
            ChiefComplaint
                | Hpi
                | PastMedical
                | PastHistory
                | PastSurgical
                | Social
                | Ros
                | PhysicalExam
                | Vitals
                | Allergies
                | Medications
                | Labs
                | Results
                | Subjective
                | Objective
        )
    )
}

fn is_medication(text: &str) -> bool {
    let dose = DOSE.captures_iter(text).any(|c| c.get(1).is_none());
    if dose || FREQUENCY.is_match(text) {
        return true;
    }
    DRUG.find_iter(text).any(|m| !after_allergy_cue(text, m.start()))
}

/// True when an allergy cue comes before `at` on the same line (`allergic to penicillin`).
fn after_allergy_cue(text: &str, at: usize) -> bool {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    ALLERGY.is_match(&text[line_start..at])
}

fn is_lab(text: &str) -> bool {
    let first = LAB[0].captures_iter(text).any(|c| c.get(2).is_none());
    first || LAB[1..].iter().any(|r| r.is_match(text)) || !super::codes::loinc(text).is_empty()
}

fn is_diagnosis(text: &str) -> bool {
    if !super::codes::icd10(text).is_empty() {
        return true;
    }
    let sentence = |at: usize| &text[text[..at].rfind(['.', '\n', ';']).map_or(0, |i| i + 1)..at];
    let cue = DIAGNOSIS[0].find_iter(text).any(|m| !RELATIVE.is_match(sentence(m.start())));
    cue || DIAGNOSIS[1].find_iter(text).any(|m| {
        let before = sentence(m.start());
        !NEGATION.is_match(before) && !RELATIVE.is_match(before)
    })
}

/// A problem's title in an assessment (`Hypertension.`, `2. Mood.`): a short line that
/// names, without a verb of doing, what the lines under it are about.
fn is_problem_title(text: &str) -> bool {
    let marker = |c: char| c.is_ascii_digit() || c.is_whitespace() || matches!(c, '.' | ')' | '-' | '*' | '•' | '#');
    let title = text.trim_start_matches(marker).trim_end_matches(['.', ':']).trim();
    let short = !title.is_empty() && title.split_whitespace().count() <= 8 && !title.contains(['\n', ':', ';']);
    short && title.starts_with(char::is_uppercase) && !PLAN.iter().any(|r| r.is_match(title))
}

/// How many note-only cues `text` shows (for the detection signal): allergy statements,
/// vitals with their values, dosing abbreviations.
pub(crate) fn note_cues(text: &str) -> usize {
    ALLERGY.find_iter(text).count() + VITAL[..3].iter().map(|r| r.find_iter(text).count()).sum::<usize>() + FREQUENCY.find_iter(text).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str, section: Option<Section>) -> Vec<&'static str> {
        kinds(text, section).names()
    }

    #[test]
    fn doses_are_medications_and_concentrations_are_labs() {
        assert_eq!(names("Increase Lasix to 80 mg daily.", Some(Section::Medications)), ["medication"]);
        assert_eq!(names("Hemoglobin 13.2 g/dL.", None), ["lab"]);
        assert_eq!(names("Ferritin was low.", Some(Section::Results)), ["lab"]);
        assert!(names("recheck CBC, iron ferritin, B-12, and folate for the next 12 weeks", Some(Section::Results)).is_empty());
    }

    #[test]
    fn vitals_in_their_usual_shapes() {
        for text in [
            "BP 112/72 HR 86",
            "Blood Pressure: 124/80 mmHg.",
            "Heart Rate: 80 beats per minute",
            "SpO2 98% RA",
            "Temperature: 98.2 degrees F",
            "Afebrile.",
        ] {
            assert_eq!(names(text, None), ["vital"], "{text}");
        }
        assert!(names("Respiratory: Rales bilateral bases.", None).is_empty());
    }

    #[test]
    fn allergies_and_the_drug_they_name() {
        assert_eq!(names("NKDA", None), ["allergy"]);
        assert_eq!(names("Allergic to penicillin (hives).", None), ["allergy"]);
        assert_eq!(names("No known drug allergies.", None), ["allergy"]);
    }

    #[test]
    fn negated_and_family_diseases_are_no_diagnosis() {
        assert_eq!(names("Diagnosed with hypertension in 2019.", None), ["diagnosis"]);
        assert!(names("She denies any history hypertension or asthma.", None).is_empty());
        assert!(names("Mother with diabetes and hypertension.", Some(Section::Family)).is_empty());
        assert!(names("Her brother was recently diagnosed with strep throat.", Some(Section::Hpi)).is_empty());
        assert!(!names("Latex: contact dermatitis.", Some(Section::Allergies)).contains(&"diagnosis"));
    }

    #[test]
    fn plans_outside_the_history() {
        assert_eq!(names("We will order a repeat echocardiogram.", Some(Section::AssessmentPlan)), ["plan"]);
        assert!(names("He was advised to rest.", Some(Section::Hpi)).is_empty());
        assert_eq!(names("Follow up in 2 weeks.", None), ["plan"]);
        let consent = "Patient Agreements: The patient understands and agrees with the recommended medical treatment plan.";
        assert!(names(consent, Some(Section::AssessmentPlan)).is_empty());
        assert_eq!(names("2. Mood.", Some(Section::AssessmentPlan)), ["diagnosis"]);
        assert!(names("Mood.", Some(Section::Hpi)).is_empty());
    }
}
