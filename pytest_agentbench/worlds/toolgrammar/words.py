"""Literal word lists every world is built from (no faker: its corpora change between releases)."""

from __future__ import annotations

FIRST_NAMES = (
    "Ada",
    "Alan",
    "Amara",
    "Anton",
    "Aria",
    "Bea",
    "Boris",
    "Carla",
    "Chen",
    "Clara",
    "Dara",
    "Dmitri",
    "Edith",
    "Elias",
    "Emeka",
    "Fatima",
    "Felix",
    "Greta",
    "Hana",
    "Hugo",
    "Ines",
    "Ivan",
    "Jonas",
    "Juno",
    "Kai",
    "Kenji",
    "Lara",
    "Leon",
    "Lina",
    "Marco",
    "Maya",
    "Mina",
    "Nadia",
    "Nico",
    "Noor",
    "Omar",
    "Otto",
    "Paula",
    "Priya",
    "Quinn",
    "Rafa",
    "Rosa",
    "Sami",
    "Selma",
    "Tariq",
    "Tess",
    "Uma",
    "Viktor",
    "Wren",
    "Yara",
)
LAST_NAMES = (
    "Abbott",
    "Achebe",
    "Bauer",
    "Borg",
    "Castillo",
    "Chowdhury",
    "Dahl",
    "Duarte",
    "Eklund",
    "Farah",
    "Fischer",
    "Garcia",
    "Haddad",
    "Holm",
    "Ibrahim",
    "Jensen",
    "Kato",
    "Kowalski",
    "Lindqvist",
    "Mendes",
    "Moreau",
    "Nakamura",
    "Novak",
    "Okafor",
    "Olsen",
    "Petrov",
    "Quintero",
    "Rahman",
    "Rossi",
    "Sato",
    "Schmidt",
    "Silva",
    "Tanaka",
    "Torres",
    "Ueda",
    "Vargas",
    "Weber",
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
SERVICE_ADJECTIVES = (
    "amber",
    "basalt",
    "cedar",
    "delta",
    "ember",
    "falcon",
    "granite",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lumen",
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
