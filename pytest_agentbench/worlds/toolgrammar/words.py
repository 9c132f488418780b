"""Literal word lists every world is built from (no faker: its corpora change between releases)."""

from __future__ import annotations

# 75 first names drawn for 320 customers and 260 patients leave about 70 and 65 of them
# shared by two or more principals, as the seed's populations do: the ambiguous trap asks
# about exactly those names. Last names only keep the full names apart: 63 of them, as
# many as the seed's family names.
FIRST_NAMES = (
    "Ada",
    "Agnes",
    "Alan",
    "Amara",
    "Anton",
    "Aria",
    "Bea",
    "Boris",
    "Bruno",
    "Carla",
    "Chen",
    "Clara",
    "Cyrus",
    "Dara",
    "Delia",
    "Dmitri",
    "Edith",
    "Elias",
    "Emeka",
    "Esme",
    "Fatima",
    "Felix",
    "Fenna",
    "Gideon",
    "Greta",
    "Hana",
    "Hedda",
    "Hugo",
    "Ilse",
    "Ines",
    "Ivan",
    "Jonas",
    "Jorge",
    "Juno",
    "Kai",
    "Kalinda",
    "Kenji",
    "Lara",
    "Leon",
    "Lina",
    "Lorcan",
    "Magnus",
    "Marco",
    "Maya",
    "Mina",
    "Nadia",
    "Nell",
    "Nico",
    "Noor",
    "Omar",
    "Oskar",
    "Otto",
    "Paula",
    "Pilar",
    "Priya",
    "Quinn",
    "Rafa",
    "Ravi",
    "Rosa",
    "Sami",
    "Selma",
    "Signe",
    "Tariq",
    "Teodor",
    "Tess",
    "Ulla",
    "Uma",
    "Vesna",
    "Viktor",
    "Wim",
    "Wren",
    "Xavier",
    "Yara",
    "Yvo",
    "Zainab",
)
LAST_NAMES = (
    "Abbott",
    "Achebe",
    "Andersen",
    "Bauer",
    "Bertolini",
    "Borg",
    "Castillo",
    "Chowdhury",
    "Costa",
    "Dahl",
    "Drummond",
    "Duarte",
    "Eklund",
    "Esposito",
    "Farah",
    "Fischer",
    "Fontaine",
    "Gallagher",
    "Garcia",
    "Haddad",
    "Holm",
    "Horvath",
    "Ibrahim",
    "Iversen",
    "Jensen",
    "Jovanovic",
    "Kaplan",
    "Kato",
    "Kowalski",
    "Laine",
    "Lindqvist",
    "Mendes",
    "Moreau",
    "Murphy",
    "Nakamura",
    "Nilsson",
    "Novak",
    "Okafor",
    "Olsen",
    "Ortega",
    "Petrov",
    "Pinheiro",
    "Quintero",
    "Quist",
    "Rahman",
    "Rautio",
    "Rossi",
    "Sandoval",
    "Sato",
    "Schmidt",
    "Silva",
    "Takahashi",
    "Tanaka",
    "Torres",
    "Ueda",
    "Urquhart",
    "Varga",
    "Vargas",
    "Weber",
    "Wolff",
    "Yilmaz",
    "Zhang",
    "Zielinski",
)
EMAIL_DOMAINS = ("example.com", "example.org", "example.net")

# ops
REGIONS = ("north", "south", "east", "west")
TIERS = ("free", "standard", "premium", "enterprise")
ORDER_STATUSES = ("pending", "shipped", "delivered", "returned", "cancelled")
CARRIERS = ("parcelline", "swiftpost", "northfreight", "bluecourier")
PRODUCTS = (
    "lamp",
    "kettle",
    "chair",
    "desk",
    "monitor",
    "keyboard",
    "backpack",
    "blender",
    "headset",
    "tripod",
    "router",
    "notebook",
    "toaster",
    "speaker",
    "rug",
    "mirror",
)
TICKET_SUBJECTS = (
    "late delivery",
    "damaged item",
    "wrong item",
    "billing question",
    "missing part",
    "address change",
    "return request",
    "warranty claim",
)
TICKET_STATUSES = ("open", "pending", "resolved", "closed")
PRIORITIES = ("low", "normal", "high", "urgent")
AGENTS = ("agent.ames", "agent.brook", "agent.cole", "agent.diaz", "agent.ellis")
NOTE_PHRASES = (
    "prefers email contact",
    "gate code on file",
    "leave at reception",
    "repeat buyer",
    "asked for paper invoice",
    "called twice last month",
    "fragile items",
    "no weekend delivery",
)

# clinic
SITES = ("harbour", "hillside", "riverside", "central")
COVERAGE_PLANS = ("basic", "standard", "plus", "complete")
SERVICE_BANDS = ("routine", "diagnostic", "specialist")
APPOINTMENT_STATUSES = ("scheduled", "completed", "cancelled", "no_show")
SPECIALTIES = (
    "cardiology",
    "dermatology",
    "neurology",
    "orthopaedics",
    "ophthalmology",
    "physiotherapy",
)
VISIT_REASONS = (
    "annual check",
    "follow-up",
    "persistent cough",
    "back pain",
    "skin rash",
    "blood test",
    "vision change",
    "knee injury",
    "headache",
    "vaccination",
)
REFERRAL_STATUSES = ("open", "sent", "accepted", "closed")
URGENCIES = ("routine", "soon", "urgent")
CLINIC_STAFF = ("coord.avery", "coord.blake", "coord.casey", "coord.devon")

# doc
# Fewer stems than services: each stem names two or three services, so a stem alone is ambiguous.
SERVICE_STEMS = (
    "alder",
    "amber",
    "basalt",
    "birch",
    "cedar",
    "coral",
    "delta",
    "dusk",
    "ember",
    "falcon",
    "flint",
    "garnet",
    "granite",
    "harbor",
    "heron",
    "indigo",
    "iris",
    "jasper",
    "juniper",
    "kelp",
    "kestrel",
    "lotus",
    "lumen",
    "marlin",
    "nectar",
    "onyx",
    "prairie",
    "quartz",
    "raven",
    "saffron",
    "tundra",
    "umbra",
    "verdant",
    "walnut",
    "yonder",
    "zenith",
)
SERVICE_NOUNS = ("gateway", "ledger", "relay", "vault", "beacon", "index", "queue", "mesh")
SERVICE_CATEGORIES = ("payments", "identity", "storage", "messaging", "analytics", "platform")
SERVICE_STATUSES = ("active", "deprecated")
TEAMS = ("team-atlas", "team-borealis", "team-cobalt", "team-dune", "team-eos", "team-fjord")
DOC_KINDS = ("policy", "runbook", "faq", "design_note")
DOC_STATUSES = ("draft", "published", "superseded")
FACT_KEYS = (
    "retention_days",
    "max_retries",
    "timeout_seconds",
    "rotation_days",
    "page_size",
    "rate_limit_per_minute",
    "backup_hour",
    "support_tier",
)
SECTION_HEADINGS = ("overview", "configuration", "operations", "limits", "escalation")
DOC_AUTHORS = ("writer.aoki", "writer.bell", "writer.cruz", "writer.dunn")
ISSUE_SUMMARIES = (
    "outdated example",
    "broken link",
    "unclear wording",
    "missing step",
    "wrong default",
    "typo in heading",
)
ISSUE_STATUSES = ("open", "accepted", "rejected", "fixed")
