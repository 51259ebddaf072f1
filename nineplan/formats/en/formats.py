# Django picks these over its own English formats (FORMAT_MODULE_PATH in the settings);
# templates name them, e.g. {{ plan.created_at|date:"DATETIME_FORMAT" }}.
DATETIME_FORMAT = "Y-m-d H:i T"
SHORT_DATETIME_FORMAT = DATETIME_FORMAT
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = DATE_FORMAT
TIME_FORMAT = "H:i T"
